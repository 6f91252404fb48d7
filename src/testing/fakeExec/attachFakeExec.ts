import type { IncomingMessage, Server } from 'node:http';
import { mkdirSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Clock } from '../../clock/index.js';
import { decodeClientFrame, encodeServerFrame, type ServerFrame } from '../../nomad/exec/frames.js';
import { parseExecCommand, parseExecTty } from '../nomad/execQuery.js';
import { requestToken } from '../nomad/wire.js';
import { fakeNomadFeatures, type FakeNomadFeatures } from '../nomad/versionFeatures.js';
import { loadNodePty } from './nodePty.js';
import { resolveExecutable, spawnPiped, spawnTerminal, type LocalProcess, type SpawnRequest } from './processes.js';

/** What the fake knows of an allocation. */
export interface FakeExecTarget {
  tasks: readonly string[];
  /** The allocation's working directory (created if missing); commands run in it. */
  workdir: string;
  /**
   * Each task's state as the client last reported it (pending, running, dead): a task not started
   * yet (none reported) or finished refuses commands as Nomad's does. Without `states`, every task runs.
   */
  states?: Readonly<Record<string, string>>;
}

/** An allocation ID Nomad cannot look up at all: the close it answers (e.g. 1011 `alloc lookup failed: …`). */
export interface FakeExecRefusal {
  code: number;
  reason: string;
}

export interface FakeExecOptions {
  lookup(allocId: string): FakeExecTarget | FakeExecRefusal | undefined;
  /** Times the escalation from SIGHUP to SIGKILL when a client leaves a command running. */
  clock: Clock;
  /** Extra environment for every command (PATH comes from this process unless given). */
  env?: Readonly<Record<string, string>>;
  /** ACLs on: the upgrade needs this X-Nomad-Token, refused with 403 before it as Nomad 1.1.2 does. */
  token?: string;
  /**
   * The release played (versionFeatures.ts; default 1.1.2): `execErrorsAfterUpgrade` (2.0.3+), a
   * refused token or a bad `command` is a close frame after the upgrade (1008 for a 4xx, 1011 for a
   * 500) instead of an HTTP error; `bearerToken` (1.4+), `Authorization: Bearer` works;
   * `execEndWithoutCloseFrame` (1.8+), after `exited` the TCP connection just closes.
   */
  features?: Pick<FakeNomadFeatures, 'bearerToken' | 'execErrorsAfterUpgrade' | 'execEndWithoutCloseFrame'>;
}

export interface FakeExec {
  /** Process ids of commands still running. */
  readonly running: ReadonlySet<number>;
  /** Resolves once no command is running. */
  idle(): Promise<void>;
  /** Kills every command running in the allocation at once (SIGKILL), as its task's end (an OOM kill) does. */
  killAllocation(allocId: string): void;
  /** Ends every session (its command killed at once) and stops handling upgrades. */
  close(): Promise<void>;
}

/** Nomad 1.1.2's data frames carry at most this much output. */
const MAX_FRAME_BYTES = 4096;
/** Output sent but not yet on the wire before the command's output is paused. */
const SEND_HIGH_WATER = 1024 * 1024;
/** A command still running after its client left gets SIGHUP, then SIGKILL after this long. */
export const KILL_GRACE_MS = 2_000;

const EXEC_PATH = /^\/v1\/client\/allocation\/([^/]+)\/exec$/;

/**
 * Nomad's exec websocket on a FakeNomad (or any http.Server), as Nomad 1.1.2 behaves
 * (test/fixtures/nomad-1.1.2/exec): the upgrade always succeeds, errors come as close frames
 * (1008 unknown allocation, 1011 unknown task or a command that cannot start), output in base64
 * frames of at most 4096 bytes, `exit_code` left out when 0, with tty=false nothing final sent before
 * the client closes stdin (or sends input the exited command can no longer take), the close frame
 * followed at once by the end of the TCP connection, and a stdin close under a tty hanging the command
 * up as Nomad's closed pty master does (exit 129, output cut; deferred to the next output once a
 * tty_size was sent). Terminals need node-pty, loaded only then (an optional peer dependency).
 */
export function attachFakeExec(server: Server, options: FakeExecOptions): FakeExec {
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  const { bearerToken, execErrorsAfterUpgrade, execEndWithoutCloseFrame } = options.features ?? fakeNomadFeatures('1.1.2');
  const running = new Set<number>();
  let idleWaiters: (() => void)[] = [];
  const children = new Set<LocalProcess>();
  const byAllocation = new Map<string, Set<LocalProcess>>();

  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const url = new URL(request.url ?? '/', 'http://fake');
    const match = EXEC_PATH.exec(url.pathname);
    if (match === null) {
      // Someone else's upgrade, if anyone listens for it.
      if (server.listenerCount('upgrade') === 1) refuse(server, socket, 404, '');
      return;
    }
    const allocId = decodePathSegment(match[1] ?? '');
    if (allocId === undefined) {
      // Go's net/http refuses a path it cannot unescape before any handler sees it.
      refuse(server, socket, 400, '400 Bad Request');
      return;
    }
    if (crossOrigin(request)) {
      refuse(server, socket, 403, 'websocket: request origin not allowed by Upgrader.CheckOrigin');
      return;
    }
    const denied = tokenProblem(request, options.token, bearerToken);
    const command = parseExecCommand(url.searchParams.get('command'));
    const tty = parseExecTty(url.searchParams.get('tty'));
    const badRequest = typeof command === 'string' ? command : typeof tty === 'string' ? tty : undefined;
    const problem = denied !== undefined ? { status: 403, text: denied } : badRequest !== undefined ? { status: 500, text: badRequest } : undefined;
    if (problem !== undefined && !execErrorsAfterUpgrade) {
      refuse(server, socket, problem.status, problem.text);
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      // command/agent/websockets.go wrapWebsocketHandler: toWsCode(code) after the upgrade.
      if (problem !== undefined || typeof command === 'string' || typeof tty === 'string') {
        closeWith(ws, problem?.status === 500 ? 1011 : 1008, problem?.text ?? '');
        return;
      }
      start(ws, socket, allocId, url.searchParams.get('task') ?? '', command, tty);
    });
  };

  function start(ws: WebSocket, socket: Duplex, allocId: string, task: string, command: string[], tty: boolean): void {
    // Nomad's order: the server's lookup, then the client's checks (client/alloc_endpoint.go execImpl).
    const target = options.lookup(allocId);
    if (target === undefined) return closeWith(ws, 1008, `Unknown allocation "${allocId}"`);
    if ('reason' in target) return closeWith(ws, target.code, target.reason);
    if (task === '') return closeWith(ws, 1008, 'must provide task name');
    const [name, ...args] = command;
    if (name === undefined) return closeWith(ws, 1008, 'command is not present');
    if (!target.tasks.includes(task)) return closeWith(ws, 1011, 'task not found');
    const state = target.states === undefined ? 'running' : (target.states[task] ?? 'pending');
    if (state === 'pending') return closeWith(ws, 1008, `task "${task}" not started yet.`);
    if (state === 'dead') return closeWith(ws, 1008, `task "${task}" is not running.`);
    const env = {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: '/root',
      NOMAD_ALLOC_ID: allocId,
      NOMAD_TASK_NAME: task,
      NOMAD_ALLOC_DIR: `${target.workdir}/alloc`,
      NOMAD_TASK_DIR: `${target.workdir}/${task}/local`,
      ...options.env,
    };
    const executable = resolveExecutable(name, env.PATH);
    if ('error' in executable) {
      return closeWith(ws, 1011, `rpc error: code = Unknown desc = failed to start command: ${executable.error}`);
    }
    mkdirSync(target.workdir, { recursive: true });
    const request: SpawnRequest = { file: executable.file, args, cwd: target.workdir, env };
    const launch = (spawn: () => LocalProcess): void => {
      let child: LocalProcess;
      try {
        child = spawn();
      } catch (error) {
        return closeWith(ws, 1011, `rpc error: code = Unknown desc = failed to start command: ${(error as Error).message}`);
      }
      const mine = byAllocation.get(allocId) ?? new Set<LocalProcess>();
      byAllocation.set(allocId, mine.add(child));
      child.onDone(() => {
        mine.delete(child);
        if (mine.size === 0 && byAllocation.get(allocId) === mine) byAllocation.delete(allocId);
      });
      runSession(ws, socket, child, tty);
    };
    if (!tty) return launch(() => spawnPiped(request));
    // node-pty loads on the first terminal asked for; the client's frames wait in the socket meanwhile.
    ws.pause();
    loadNodePty().then(
      (pty) => {
        if (ws.readyState === ws.OPEN) launch(() => spawnTerminal(request, pty));
        ws.resume();
      },
      (error: unknown) => {
        // Reading again lets the closing handshake complete. Nomad's wording (executor runTTY).
        ws.resume();
        closeWith(ws, 1011, `failed to open a tty: ${(error as Error).message}`);
      },
    );
  }

  function runSession(ws: WebSocket, socket: Duplex, child: LocalProcess, tty: boolean): void {
    running.add(child.pid);
    let unsent = 0;
    let stdinClosed = tty;
    let exitCode: number | undefined;
    let finished = false;
    let killTimer: unknown;
    // Nomad closes the pty master on a tty stdin close: the command is hung up (SIGHUP) and its output
    // ends there. A tty_size turns Nomad's master file blocking (Go's Fd()), which defers that close
    // until the read in progress returns with the next output (recording j1: a waiting shell lives on).
    let sizeSet = false;
    let hangupAtNextOutput = false;
    let outputClosed = false;

    const send = (frame: Exclude<ServerFrame, { kind: 'noop' }>, size = 0): void => {
      if (ws.readyState !== ws.OPEN) return;
      unsent += size;
      if (unsent > SEND_HIGH_WATER) child.pauseOutput(true);
      ws.send(encodeServerFrame(frame), () => {
        unsent -= size;
        if (unsent <= SEND_HIGH_WATER) child.pauseOutput(false);
      });
    };
    const finish = (): void => {
      if (finished || exitCode === undefined || !stdinClosed) return;
      finished = true;
      if (!tty) send({ kind: 'stderr.close' });
      if (!outputClosed) send({ kind: 'stdout.close' });
      if (execEndWithoutCloseFrame) {
        ws.send(encodeServerFrame({ kind: 'exited', exitCode }), () => ws.terminate());
        return;
      }
      // 1.1.2 sends its close frame and closes the connection at once (ws.Close), without waiting
      // for the client's: input still on its way meets a closed socket.
      send({ kind: 'exited', exitCode });
      ws.close(1000);
      socket.once('finish', () => socket.destroy());
      socket.end();
    };
    const hangUpTerminal = (): void => {
      if (outputClosed) return;
      outputClosed = true;
      send({ kind: 'stdout.close' });
      child.signalGroup('SIGHUP');
    };
    const processGone = (): void => {
      running.delete(child.pid);
      if (killTimer !== undefined) options.clock.clearTimeout(killTimer);
      children.delete(child);
      if (running.size === 0) {
        const waiters = idleWaiters;
        idleWaiters = [];
        for (const resolve of waiters) resolve();
      }
    };
    // The client left before the command ended: hang up on it, as a closed terminal would.
    const hangUp = (): void => {
      if (!running.has(child.pid)) return;
      child.signalGroup('SIGHUP');
      child.signalGroup('SIGCONT');
      killTimer = options.clock.setTimeout(() => child.signalGroup('SIGKILL'), KILL_GRACE_MS);
    };
    const endOfStdin = (): void => {
      stdinClosed = true;
      child.closeStdin();
      finish();
    };
    children.add(child);

    child.onOutput((stream, data) => {
      if (outputClosed) return;
      for (let at = 0; at < data.length; at += MAX_FRAME_BYTES) {
        const slice = data.subarray(at, at + MAX_FRAME_BYTES);
        send({ kind: stream, data: slice }, slice.length);
      }
      if (hangupAtNextOutput) hangUpTerminal();
    });
    child.onDone((code) => {
      exitCode = code;
      processGone();
      finish();
    });
    ws.on('message', (raw: Buffer) => {
      let frame;
      try {
        frame = decodeClientFrame(raw.toString());
      } catch (error) {
        // Nomad ends the session on anything that is not stdin, tty_size or a heartbeat.
        closeWith(ws, 1011, (error as Error).message);
        hangUp();
        return;
      }
      switch (frame.kind) {
        case 'stdin':
          if (outputClosed) return;
          // Stop reading the socket until the command has taken its input: backpressure to the client.
          ws.pause();
          child.write(frame.data, (accepted) => {
            ws.resume();
            // Input the command can no longer take (EPIPE) ends Nomad's wait for the stdin close.
            if (!accepted && !tty) endOfStdin();
          });
          return;
        case 'stdin.close':
          if (!tty) endOfStdin();
          else if (sizeSet) hangupAtNextOutput = true;
          else hangUpTerminal();
          return;
        case 'tty_size':
          sizeSet = true;
          child.resize(frame.rows, frame.cols);
          return;
        case 'heartbeat':
          return;
      }
    });
    ws.on('close', hangUp);
    ws.on('error', () => undefined);
  }

  server.on('upgrade', onUpgrade);
  return {
    running,
    killAllocation: (allocId) => {
      for (const child of byAllocation.get(allocId) ?? []) child.signalGroup('SIGKILL');
    },
    idle: () => (running.size === 0 ? Promise.resolve() : new Promise((resolve) => idleWaiters.push(resolve))),
    close: async () => {
      server.off('upgrade', onUpgrade);
      for (const client of wss.clients) client.terminate();
      // Shutting down: no grace.
      for (const child of children) child.signalGroup('SIGKILL');
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/** A malformed %-escape names no allocation; keep it as sent rather than fail. */
/** The segment unescaped, or undefined when it holds an escape that is not one. */
function decodePathSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** Close reasons are limited to 123 bytes by the websocket protocol. */
function closeWith(ws: WebSocket, code: number, reason: string): void {
  let text = reason;
  while (Buffer.byteLength(text) > 123) text = text.slice(0, -1);
  ws.close(code, text);
}

/**
 * An HTTP answer instead of the upgrade. Go's net/http ends the connection only after its own 400 (a
 * path it cannot unescape, before any handler); a handler's refusal (the 500s of a bad `command` or
 * `tty`, a 403) keeps it for the next request, as any keep-alive answer does (measured on 1.1.2: still
 * open 10 s later), so the client must close it. The fake hands such a connection back to the server.
 */
function refuse(server: Server, socket: Duplex, status: number, body: string): void {
  const reason = status === 400 ? 'Bad Request' : status === 403 ? 'Forbidden' : status === 404 ? 'Not Found' : 'Internal Server Error';
  const head = `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`;
  if (status === 400) {
    socket.end(`${head}Connection: close\r\n\r\n${body}`);
    return;
  }
  socket.write(`${head}\r\n${body}`);
  // Under TLS the HTTP server reads TLS sockets, which it is handed on 'secureConnection'.
  server.emit(socket instanceof TLSSocket ? 'secureConnection' : 'connection', socket);
}

/** Nomad 1.1.2's answers: no token lacks permission, a wrong one is not found. */
function tokenProblem(request: IncomingMessage, token: string | undefined, bearer: boolean): string | undefined {
  if (token === undefined) return undefined;
  const given = requestToken(request, bearer);
  if (given === token) return undefined;
  return given === undefined || given === '' ? 'Permission denied' : 'ACL token not found';
}

/** gorilla/websocket's default CheckOrigin: an Origin whose host is not the Host is refused. */
function crossOrigin(request: IncomingMessage): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host.toLowerCase() !== (request.headers.host ?? '').toLowerCase();
  } catch {
    return true;
  }
}
