import { randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import type { ActorRefFrom } from 'xstate';
import { execSessionMachine, type ExecSessionInput, type ExecSessionOutcome } from '../../machines/execSession.js';
import type { Clock } from '../clock/index.js';
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
   * Under a tty the end of stdin sends nothing (Nomad would hang the terminal up); Ctrl-D is its EOF.
   */
  stdin?: Readable | 'pipe';
  signal?: AbortSignal;
  /** Ends the session (ExecTimeoutError) if the command has not exited by then, on the owner's clock. */
  timeoutMs?: number;
}

/** A session's actor: connecting → open → exited | failed | cancelled. */
export type ExecSessionActor = ActorRefFrom<typeof execSessionMachine>;

export interface ExecSession {
  stdout: Readable;
  /** Empty with tty=true: the terminal merges stderr into stdout. */
  stderr: Readable;
  stdin: Writable;
  resize(rows: number, cols: number): void;
  /**
   * The remote exit code; rejects with a typed ExecError (or ExecAbortedError / ExecTimeoutError),
   * or with the owner's error when the owner ends the session by stopping (a supervisor's
   * SupervisorStoppedError).
   */
  exitCode: Promise<number>;
  /** The session's actor, for inspection: a root actor (ExecClient) or a child of the supervisor's. */
  actor: ExecSessionActor;
}

/** Anything that runs commands in allocations: an ExecClient, a Supervisor. */
export interface ExecTarget {
  exec(allocId: string, options: ExecOptions): ExecSession;
}

/** Who creates a session's actor, the one thing in which the owners of sessions differ. */
export interface ExecSessionOwner {
  /** Creates and starts the actor of `sessions.machine` for this input (a root actor, or a child). */
  spawn(input: ExecSessionInput): ExecSessionActor;
  /** Why the session ended when its actor was stopped before reaching an outcome (the owner stopped). */
  stoppedError(input: ExecSessionInput): Error;
}

export interface ExecSessionsOptions {
  clock: Clock;
  /** Output bytes buffered per stream before the socket stops being read. */
  highWaterMark?: number;
}

function exitCodeOf(outcome: ExecSessionOutcome): number {
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

/**
 * Opens exec sessions against one Nomad: builds each session's websocket connection and streams,
 * hands the connection to the session actor's transport (by session id), and wires stdin, the abort
 * signal and the exit code around the actor. The actor itself comes from the owner.
 */
export class ExecSessions {
  /** Connections built and not yet taken by their session's transport (taken as the actor starts). */
  readonly #unclaimed = new Map<string, ExecConnection>();
  /** The session machine whose transport runs the connection opened for each session. */
  readonly machine = execSessionMachine.provide({ actors: { transport: connectionTransport((id) => this.#take(id)) } });
  readonly #config: NomadConfig;
  readonly #options: ExecSessionsOptions;

  constructor(config: NomadConfig, options: ExecSessionsOptions) {
    this.#config = config;
    this.#options = options;
  }

  open(allocId: string, options: ExecOptions, owner: ExecSessionOwner): ExecSession {
    const request = { allocId, task: options.task, command: [...options.command], tty: options.tty ?? false };
    const { clock, highWaterMark } = this.#options;
    const connection = new ExecConnection(this.#config, request, { clock, ...(highWaterMark === undefined ? {} : { highWaterMark }) });
    const input: ExecSessionInput = {
      sessionId: randomUUID(),
      ...request,
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    };
    this.#unclaimed.set(input.sessionId, connection);
    let actor: ExecSessionActor;
    try {
      actor = owner.spawn(input);
    } finally {
      // Normally taken by now; left over only if no actor started, and then nobody will.
      this.#unclaimed.delete(input.sessionId);
    }

    const { signal, stdin } = options;
    const cancel = (): void => actor.send({ type: 'CANCEL' });
    const exitCode = new Promise<ExecSessionOutcome>((resolve, reject) => {
      actor.subscribe({
        complete: () => {
          const output = actor.getSnapshot().output;
          if (output === undefined) reject(owner.stoppedError(input));
          else resolve(output);
        },
        error: reject,
      });
    })
      .finally(() => {
        signal?.removeEventListener('abort', cancel);
        if (stdin !== undefined && stdin !== 'pipe') stdin.unpipe(connection.stdin);
        // A session stopped before its transport ran still owes its streams an end.
        connection.close();
      })
      .then(exitCodeOf);
    // The caller may only read the streams; an unobserved failure must not crash the process.
    exitCode.catch(() => undefined);

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

  #take(sessionId: string): ExecConnection | undefined {
    const connection = this.#unclaimed.get(sessionId);
    this.#unclaimed.delete(sessionId);
    return connection;
  }
}
