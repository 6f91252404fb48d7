/**
 * One execution over Poseidon's WebSocket protocol (api/websocket.schema.json, internal/api/ws):
 * `{"type":"start"}` first; the command's output as `stdout` / `stderr` messages (kept apart, a
 * multi-byte character never split between two); the client's text messages forwarded to the
 * command's stdin; then one of `{"type":"exit","data":<0-255>}`, `{"type":"timeout"}` (its time
 * limit or the runner's inactivity timeout) or `{"type":"error","data":…}`, and a normal close.
 * A client that goes away has the command stopped as Poseidon stops it (Execution.interrupt); a
 * server that shuts down tells the client so before it closes (1001, going away).
 */
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import type { WebSocket } from 'ws';
import { OOM_KILLED } from '../../machines/runner.js';
import type { Clock } from '../clock/index.js';
import { ExecutionCancelledError } from '../runners/execution.js';
import type { Execution, ExecutionOutcome } from '../runners/execution.js';
import { RunnerStoppedError, RunnerUnavailableError, UnprivilegedUnavailableError } from '../runners/errors.js';
import type { Runner } from '../runners/runner.js';
import type { ExecutionRequest } from './requests.js';

/** The messages of websocket.schema.json. */
export type ServerMessage =
  | { type: 'start' | 'timeout' }
  | { type: 'stdout' | 'stderr' | 'error'; data: string }
  | { type: 'exit'; data: number };

/** How an execution over the API ended (a metric's label). */
export type SocketOutcome = 'exited' | 'timeout' | 'error' | 'client_closed' | 'shutdown';

export interface ExecutionSocketOptions {
  clock: Clock;
  /**
   * Run under a pseudo-terminal, as Poseidon runs every interactive execution (stderr still apart).
   * Without one, the command reads no input (its stdin is closed at once).
   */
  tty: boolean;
  /** Called once, when it has ended. */
  onEnd?(outcome: SocketOutcome, durationMs: number): void;
  /** Bytes through the execution, per stream. */
  onBytes?(stream: 'stdin' | 'stdout' | 'stderr', bytes: number): void;
  /** Something to log (never the client's data). */
  onProblem?(message: string, error: unknown): void;
}

/** Poseidon's words for an execution that could not end normally (ws/codeocean_writer.go Close). */
export const ERROR_TEXTS = {
  stopped: 'the allocation stopped as expected',
  oomKilled: OOM_KILLED,
  failed: 'Error executing the request',
  shutdown: 'the server is shutting down',
} as const;

/** Output buffered for a slow client beyond this pauses the command's streams until it drains. */
const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 256 * 1024;

function errorText(error: unknown): string {
  if (error instanceof RunnerStoppedError) {
    if (error.kind === 'oom-killed') return ERROR_TEXTS.oomKilled;
    if (error.kind === 'destroyed' || error.kind === 'retired' || (error.kind === 'allocation-ended' && /completed/.test(error.message))) return ERROR_TEXTS.stopped;
    return ERROR_TEXTS.failed;
  }
  // Destroyed between its execute request and its connection.
  if (error instanceof RunnerUnavailableError) return ERROR_TEXTS.stopped;
  // A host that cannot run it: Poseidon's words, then why (a wrapper missing, privileges that cannot be dropped).
  if (error instanceof UnprivilegedUnavailableError) return `${ERROR_TEXTS.failed}: ${error.message}`;
  return ERROR_TEXTS.failed;
}

/** An exit code as one byte: itself within 0–255, else 255 (never 0 by truncation). */
function exitByte(code: number): number {
  return Number.isInteger(code) && code >= 0 && code <= 255 ? code : 255;
}

function ended(stream: Readable): Promise<void> {
  return new Promise((resolve) => {
    if (stream.readableEnded || stream.destroyed) return resolve();
    stream.once('end', () => resolve());
    stream.once('close', () => resolve());
  });
}

export class ExecutionSocket {
  private execution: Execution | undefined;
  private finished = false;
  private readonly startedAt: number;
  private readonly streams: Readable[] = [];
  private paused = false;

  constructor(
    private readonly ws: WebSocket,
    private readonly runner: Runner,
    private readonly request: ExecutionRequest,
    private readonly options: ExecutionSocketOptions,
  ) {
    this.startedAt = options.clock.now();
  }

  /** True once its last message is sent (or its client went away). */
  get done(): boolean {
    return this.finished;
  }

  start(): void {
    const { ws, request } = this;
    ws.on('close', () => this.clientGone());
    ws.on('error', (error) => this.options.onProblem?.('the execution WebSocket failed', error));
    this.send({ type: 'start' });
    let execution: Execution;
    try {
      execution = this.runner.execute({
        command: request.command,
        // Poseidon marks every execution so (dto.ExecutionRequest.FullCommand).
        env: { ...request.environment, CODEOCEAN: 'true' },
        timeLimitS: request.timeLimit,
        privileged: request.privilegedExecution,
        tty: this.options.tty,
        // Without a terminal Nomad reports a command's exit only once its stdin is closed (1.1.2,
        // recorded): such an execution reads no input. Poseidon always runs them with a terminal.
        ...(this.options.tty ? { stdin: 'pipe' as const } : {}),
      });
    } catch (error) {
      this.finish({ type: 'error', data: errorText(error) }, 'error', error);
      return;
    }
    this.execution = execution;
    execution.stdin.on('error', () => undefined);
    ws.on('message', (data, isBinary) => {
      // Poseidon reads text messages as input; anything else is not input.
      if (isBinary || this.finished || !this.options.tty) return;
      const bytes = Buffer.isBuffer(data) ? data : Buffer.concat(Array.isArray(data) ? data : [Buffer.from(data)]);
      this.options.onBytes?.('stdin', bytes.length);
      execution.stdin.write(bytes);
    });
    this.forward(execution.stdout, 'stdout');
    this.forward(execution.stderr, 'stderr');
    const outputDone = Promise.all([ended(execution.stdout), ended(execution.stderr)]);
    void execution.outcome.then(async (outcome) => {
      // The whole output comes before the exit code; a timeout or failure ends it at once.
      if (outcome.status === 'exited') await outputDone;
      this.finishWith(outcome);
    });
  }

  /**
   * The server is stopping: the client is told, its command stopped, the socket closed (1001).
   * Resolves once the client has answered the close (or the socket is gone).
   */
  shutDown(): Promise<void> {
    const closed = new Promise<void>((resolve) => {
      if (this.ws.readyState === this.ws.CLOSED) resolve();
      else this.ws.once('close', () => resolve());
    });
    if (!this.finished) {
      this.finish({ type: 'error', data: ERROR_TEXTS.shutdown }, 'shutdown', undefined, 1001);
      this.execution?.cancel(ERROR_TEXTS.shutdown);
    }
    return closed;
  }

  /** Drops the connection without a closing handshake (a client that did not answer the close). */
  terminate(): void {
    this.ws.terminate();
  }

  private finishWith(outcome: ExecutionOutcome): void {
    if (outcome.status === 'exited') this.finish({ type: 'exit', data: exitByte(outcome.exitCode) }, 'exited');
    else if (outcome.status === 'timeout') this.finish({ type: 'timeout' }, 'timeout');
    // Ended by us (client gone, shutdown): already finished.
    else if (!(outcome.error instanceof ExecutionCancelledError)) this.finish({ type: 'error', data: errorText(outcome.error) }, 'error', outcome.error);
  }

  private forward(stream: Readable, type: 'stdout' | 'stderr'): void {
    this.streams.push(stream);
    const decoder = new StringDecoder('utf8');
    stream.on('data', (chunk: Buffer) => {
      this.options.onBytes?.(type, chunk.length);
      const data = decoder.write(chunk);
      if (data !== '') this.send({ type, data });
    });
    stream.on('end', () => {
      const rest = decoder.end();
      if (rest !== '') this.send({ type, data: rest });
    });
    stream.on('error', () => undefined);
  }

  private send(message: ServerMessage): void {
    if (this.finished || this.ws.readyState !== this.ws.OPEN) return;
    this.ws.send(JSON.stringify(message), () => this.drained());
    if (!this.paused && this.ws.bufferedAmount > HIGH_WATER) {
      this.paused = true;
      for (const stream of this.streams) stream.pause();
    }
  }

  private drained(): void {
    if (!this.paused || this.ws.bufferedAmount > LOW_WATER) return;
    this.paused = false;
    for (const stream of this.streams) stream.resume();
  }

  private finish(last: ServerMessage, outcome: SocketOutcome, cause?: unknown, code = 1000): void {
    if (this.finished) return;
    this.send(last);
    this.finished = true;
    if (outcome === 'error' && cause !== undefined) this.options.onProblem?.('an execution ended with an error', cause);
    if (this.ws.readyState === this.ws.OPEN) this.ws.close(code, code === 1001 ? 'server shutting down' : '');
    for (const stream of this.streams) stream.resume();
    this.options.onEnd?.(outcome, this.options.clock.now() - this.startedAt);
  }

  private clientGone(): void {
    if (this.finished) return;
    this.finished = true;
    this.execution?.interrupt('the client closed the connection');
    this.options.onEnd?.('client_closed', this.options.clock.now() - this.startedAt);
  }
}
