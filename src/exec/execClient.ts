import { createActor } from 'xstate';
import type { Clock } from '../clock/clock.js';
import { systemClock } from '../clock/systemClock.js';
import type { NomadConfig } from '../nomad/config.js';
import { ExecAbortedError } from '../nomad/exec/errors.js';
import { ExecSessions, type ExecOptions, type ExecSession, type ExecTarget } from './sessions.js';

export interface ExecClientOptions {
  clock?: Clock;
  /** Output bytes buffered per stream before the socket stops being read. */
  highWaterMark?: number;
}

/** Runs commands in allocations over Nomad's exec websocket, one root session actor per command. */
export class ExecClient implements ExecTarget {
  readonly #sessions: ExecSessions;
  readonly #clock: Clock;

  constructor(config: NomadConfig, options: ExecClientOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#sessions = new ExecSessions(config, {
      clock: this.#clock,
      ...(options.highWaterMark === undefined ? {} : { highWaterMark: options.highWaterMark }),
    });
  }

  exec(allocId: string, options: ExecOptions): ExecSession {
    return this.#sessions.open(allocId, options, {
      spawn: (input) => createActor(this.#sessions.machine, { input, clock: this.#clock }).start(),
      stoppedError: () => new ExecAbortedError('the session actor was stopped; the session was ended'),
    });
  }
}
