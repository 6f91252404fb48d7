import type { IncomingMessage } from 'node:http';
import { Readable, Writable } from 'node:stream';
import WebSocket from 'ws';
import type { Clock, TimerHandle } from '../../clock/index.js';
import type { NomadConfig } from '../config.js';
import { decodeServerFrame, encodeClientFrame, type ClientFrame, type ServerFrame } from './frames.js';
import { ExecProtocolError, errorFromClose, errorFromHttpStatus, type ExecError } from './errors.js';
import { execSocketOptions, execUrl, type ExecRequest } from './request.js';
import { publishExecBytes } from './bytesChannel.js';
import { ignoreWritesAfterReset } from './resetSocket.js';

/** How the session goes. `exited` and `failed` are terminal: at most one of them, once. */
export interface ExecConnectionListener {
  opened(): void;
  exited(exitCode: number): void;
  failed(error: ExecError): void;
}

export interface ExecConnectionOptions {
  clock: Clock;
  /** Bytes buffered in stdout (or stderr) before the socket stops being read. Default 1 MiB. */
  highWaterMark?: number;
}

/** After our close frame, how long Nomad may keep the TCP connection before we drop it (it may keep it forever: j1). */
export const CLOSE_GRACE_MS = 1_000;

// Nomad's error bodies are one line; never hold more of one than this.
const MAX_ERROR_BODY = 64 * 1024;

type State = 'idle' | 'connecting' | 'open' | 'ended';

/**
 * One exec websocket: frames in and out, the ending rules, backpressure both ways. Heartbeats and
 * the deadline are the session machine's; the only timer here is the close grace.
 */
export class ExecConnection {
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** Writes become stdin frames (acknowledged when on the wire); `end()` sends the stdin close (not under a tty). */
  readonly stdin: Writable;
  readonly #url: string;
  readonly #socketOptions: WebSocket.ClientOptions;
  readonly #clock: Clock;
  readonly #tty: boolean;
  readonly #endedOutputs = new Set<Readable>();
  #ws: WebSocket | undefined;
  #listener: ExecConnectionListener | undefined;
  #state: State = 'idle';
  #whenOpen: (() => void)[] = [];
  #stdinClosed = false;
  #lastSocketError: Error | undefined;
  #graceTimer: TimerHandle | undefined;

  /** The streams exist at once; nothing goes on the network before `connect`. */
  constructor(config: NomadConfig, request: ExecRequest, options: ExecConnectionOptions) {
    this.#url = execUrl(config, request);
    this.#socketOptions = execSocketOptions(config);
    this.#clock = options.clock;
    this.#tty = request.tty;
    const highWaterMark = options.highWaterMark ?? 1024 * 1024;
    this.stdout = new Readable({ highWaterMark, read: () => this.#resumeUnless(this.stderr) });
    this.stderr = new Readable({ highWaterMark, read: () => this.#resumeUnless(this.stdout) });
    this.stdin = new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        publishExecBytes('stdin', chunk.length);
        this.#send({ kind: 'stdin', data: chunk }, callback);
      },
      final: (callback) => this.#closeStdin(callback),
    });
  }

  /** Opens the websocket; the listener hears how the session goes. */
  connect(listener: ExecConnectionListener): void {
    if (this.#state !== 'idle') return;
    this.#state = 'connecting';
    this.#listener = listener;
    const ws = new WebSocket(this.#url, this.#socketOptions);
    this.#ws = ws;
    ws.on('upgrade', (response: IncomingMessage) => ignoreWritesAfterReset(response.socket));
    ws.on('open', () => this.#onOpen(ws));
    ws.on('message', (data: Buffer) => this.#onMessage(ws, data));
    ws.on('close', (code: number, reason: Buffer) => this.#onClose(code, reason.toString()));
    ws.on('error', (error: Error) => {
      this.#lastSocketError = error;
    });
    ws.on('unexpected-response', (_request, response) => this.#onRefused(ws, response));
  }

  /**
   * The terminal's size in character cells, sent as given like `nomad alloc exec` does: 0×0 included
   * (a terminal that reports no size), up to 65535 (a terminal's winsize is 16 bits).
   */
  resize(rows: number, cols: number): void {
    for (const [name, value] of [['rows', rows], ['cols', cols]] as const) {
      if (!Number.isInteger(value) || value < 0 || value > 0xffff) throw new RangeError(`resize: ${name} must be an integer from 0 to 65535, got ${value}`);
    }
    this.#send({ kind: 'tty_size', rows, cols });
  }

  heartbeat(): void {
    if (this.#state === 'open') this.#send({ kind: 'heartbeat' });
  }

  /**
   * Ends the session early (cancellation, timeout): stdin close (under a tty it hangs the command up,
   * as wanted here), a close frame, and the TCP connection dropped if Nomad keeps it open. The output
   * streams end; the listener hears nothing more.
   */
  close(): void {
    const ws = this.#ws;
    const wasOpen = this.#state === 'open';
    if (this.#state === 'ended') return;
    this.#end();
    if (ws === undefined) return;
    if (!wasOpen) {
      ws.terminate();
      return;
    }
    if (!this.#stdinClosed) ws.send(encodeClientFrame({ kind: 'stdin.close' }));
    ws.close(1000, 'cancelled');
    this.#graceTimer = this.#clock.setTimeout(() => ws.terminate(), CLOSE_GRACE_MS);
  }

  #send(frame: ClientFrame, callback?: () => void): void {
    if (this.#state === 'idle' || this.#state === 'connecting') {
      this.#whenOpen.push(() => this.#send(frame, callback));
      return;
    }
    const ws = this.#ws;
    // Input after the end goes nowhere, as writes to an exited process's closed pipe would.
    if (this.#state === 'ended' || ws === undefined || ws.readyState !== WebSocket.OPEN) {
      callback?.();
      return;
    }
    ws.send(encodeClientFrame(frame), () => callback?.());
  }

  /**
   * The end of stdin. Under a tty it sends nothing: Nomad would close its pty master, hanging the
   * command up (SIGHUP: exit 129, output cut). A terminal's end of input is Ctrl-D, which is data.
   */
  #closeStdin(callback: (error?: Error | null) => void): void {
    if (this.#tty) {
      callback();
      return;
    }
    this.#send({ kind: 'stdin.close' }, () => {
      this.#stdinClosed = true;
      callback();
    });
  }

  #onOpen(ws: WebSocket): void {
    if (this.#state !== 'connecting' || ws !== this.#ws) return;
    this.#state = 'open';
    this.#listener?.opened();
    const queued = this.#whenOpen;
    this.#whenOpen = [];
    for (const send of queued) send();
  }

  #onMessage(ws: WebSocket, data: Buffer): void {
    if (this.#state !== 'open') return;
    let frame: ServerFrame;
    try {
      frame = decodeServerFrame(data.toString());
    } catch (error) {
      this.#fail(new ExecProtocolError(`Nomad sent a malformed exec frame: ${(error as Error).message}`));
      ws.terminate();
      return;
    }
    switch (frame.kind) {
      case 'stdout':
      case 'stderr': {
        const stream = this[frame.kind];
        publishExecBytes(frame.kind, frame.data.length);
        if (this.#endedOutputs.has(stream) || stream.push(frame.data)) return;
        ws.pause();
        return;
      }
      case 'stdout.close':
        this.#endOutput(this.stdout);
        return;
      case 'stderr.close':
        this.#endOutput(this.stderr);
        return;
      case 'exited':
        this.#end();
        this.#listener?.exited(frame.exitCode);
        // Completion is the exited frame; whatever Nomad does with the socket after it is normal.
        ws.close(1000);
        return;
      case 'noop':
        return;
    }
  }

  #onClose(code: number, reason: string): void {
    if (this.#graceTimer !== undefined) this.#clock.clearTimeout(this.#graceTimer);
    const cause = code === 1006 && this.#lastSocketError !== undefined ? this.#lastSocketError.message : reason;
    this.#fail(errorFromClose(code, cause));
  }

  #onRefused(ws: WebSocket, response: IncomingMessage): void {
    const chunks: Buffer[] = [];
    let size = 0;
    response.on('data', (chunk: Buffer) => {
      if (size < MAX_ERROR_BODY) chunks.push(chunk);
      size += chunk.length;
    });
    response.on('error', () => undefined);
    response.on('end', () => {
      this.#fail(errorFromHttpStatus(response.statusCode ?? 0, Buffer.concat(chunks).subarray(0, MAX_ERROR_BODY).toString()));
      ws.terminate();
    });
  }

  #fail(error: ExecError): void {
    if (this.#state === 'ended') return;
    this.#end();
    this.#listener?.failed(error);
  }

  /** Settles the output streams: what was received stays readable, then they end. */
  #end(): void {
    this.#state = 'ended';
    // Queued input is acknowledged as dropped, so a pending stdin.end() still completes.
    const queued = this.#whenOpen;
    this.#whenOpen = [];
    for (const send of queued) send();
    this.#endOutput(this.stdout);
    this.#endOutput(this.stderr);
    // Keep reading so the closing handshake completes.
    this.#ws?.resume();
  }

  #endOutput(stream: Readable): void {
    if (this.#endedOutputs.has(stream)) return;
    this.#endedOutputs.add(stream);
    stream.push(null);
  }

  /** One output asks for more: read the socket again, unless the other one is still full. */
  #resumeUnless(other: Readable): void {
    const ws = this.#ws;
    if (ws === undefined || !ws.isPaused) return;
    if (other.readableLength < other.readableHighWaterMark || this.#endedOutputs.has(other)) ws.resume();
  }
}
