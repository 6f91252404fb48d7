import type { Readable, Writable } from 'node:stream';
import { createActor, type Actor } from 'xstate';
import { execSessionMachine, type ExecSessionOutcome } from '../../machines/execSession.js';
import { systemClock, type Clock } from '../clock/index.js';
import type { NomadConfig } from '../nomad/config.js';
import { ExecConnection } from '../nomad/exec/connection.js';
import { ExecAbortedError, ExecTimeoutError } from '../nomad/exec/errors.js';
import { connectionTransport } from './transport.js';

export interface ExecOptions {
  task: string;
  /** argv, run without a shell. */
  command: readonly string[];
  tty?: boolean;
  /**
   * A Readable to forward (its end closes stdin), 'pipe' to write `session.stdin` yourself, or
   * nothing: stdin is closed at once, which is what lets a tty=false command's end reach the client.
   */
  stdin?: Readable | 'pipe';
  signal?: AbortSignal;
  /** Ends the session (ExecTimeoutError) if the command has not exited by then, on the client's clock. */
  timeoutMs?: number;
}

export interface ExecSession {
  stdout: Readable;
  /** Empty with tty=true: the terminal merges stderr into stdout. */
  stderr: Readable;
  stdin: Writable;
  resize(rows: number, cols: number): void;
  /** The remote exit code; rejects with a typed ExecError (or ExecAbortedError / ExecTimeoutError). */
  exitCode: Promise<number>;
  /** The session's actor (connecting → open → exited | failed | cancelled), for inspection. */
  actor: Actor<typeof execSessionMachine>;
}

export interface ExecClientOptions {
  clock?: Clock;
  /** Output bytes buffered per stream before the socket stops being read. */
  highWaterMark?: number;
}

function settle(outcome: ExecSessionOutcome): number {
  switch (outcome.status) {
    case 'exited':
      return outcome.exitCode;
    case 'failed':
      throw outcome.error;
    case 'cancelled':
      throw outcome.reason === 'timeout'
        ? new ExecTimeoutError('exec timed out; the session was ended')
        : new ExecAbortedError('exec was cancelled; the session was ended');
  }
}

/** Runs commands in allocations over Nomad's exec websocket, one session actor per command. */
export class ExecClient {
  readonly #config: NomadConfig;
  readonly #clock: Clock;
  readonly #highWaterMark: number | undefined;

  constructor(config: NomadConfig, options: ExecClientOptions = {}) {
    this.#config = config;
    this.#clock = options.clock ?? systemClock;
    this.#highWaterMark = options.highWaterMark;
  }

  exec(allocId: string, options: ExecOptions): ExecSession {
    const tty = options.tty ?? false;
    const request = { allocId, task: options.task, command: [...options.command], tty };
    const connection = new ExecConnection(this.#config, request, {
      clock: this.#clock,
      ...(this.#highWaterMark === undefined ? {} : { highWaterMark: this.#highWaterMark }),
    });
    const input = { ...request, ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }) };
    const actor = createActor(execSessionMachine.provide({ actors: { transport: connectionTransport(connection) } }), {
      input,
      clock: this.#clock,
    });

    const { signal, stdin } = options;
    const cancel = (): void => actor.send({ type: 'CANCEL' });
    const exitCode = new Promise<ExecSessionOutcome>((resolve) => {
      actor.subscribe({ complete: () => resolve(actor.getSnapshot().output ?? { status: 'cancelled', reason: 'cancelled' }) });
    })
      .finally(() => {
        signal?.removeEventListener('abort', cancel);
        if (stdin !== undefined && stdin !== 'pipe') stdin.unpipe(connection.stdin);
      })
      .then(settle);
    // The caller may only read the streams; an unobserved failure must not crash the process.
    exitCode.catch(() => undefined);

    actor.start();
    if (stdin === undefined) connection.stdin.end();
    else if (stdin !== 'pipe') stdin.pipe(connection.stdin);
    if (signal?.aborted) cancel();
    else signal?.addEventListener('abort', cancel, { once: true });

    return {
      stdout: connection.stdout,
      stderr: connection.stderr,
      stdin: connection.stdin,
      resize: (rows, cols) => connection.resize(rows, cols),
      exitCode,
      actor,
    };
  }
}
