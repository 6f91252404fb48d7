import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { accessSync, constants as fsConstants, statSync } from 'node:fs';
import { constants } from 'node:os';
import { delimiter, join } from 'node:path';
import type { Readable } from 'node:stream';
import type { NodePtyModule } from './nodePty.js';

/**
 * The command side of a fake exec session: a real local process, with pipes (tty=false) or a
 * pseudo-terminal (tty=true, stderr merged, CRLF, resizable), in its own process group so ending the
 * session reaches everything it started.
 */
export interface LocalProcess {
  readonly pid: number;
  /** Output as it comes; `stream` is always 'stdout' with a terminal. */
  onOutput(listener: (stream: 'stdout' | 'stderr', data: Buffer) => void): void;
  /** Called once the process has exited and all its output was delivered. */
  onDone(listener: (exitCode: number) => void): void;
  /**
   * Input for the command; calls `done` once it has taken it in, so the sender can pace itself, with
   * false when it had nowhere to go (the command closed its stdin or exited: EPIPE).
   */
  write(data: Buffer, done: (accepted: boolean) => void): void;
  closeStdin(): void;
  resize(rows: number, cols: number): void;
  /** Stops (true) or restarts (false) reading output: backpressure. */
  pauseOutput(paused: boolean): void;
  signalGroup(signal: NodeJS.Signals): void;
}

export interface SpawnRequest {
  file: string;
  args: readonly string[];
  cwd: string;
  env: Record<string, string>;
}

/** Go's os/exec wording, as Nomad relays it: the executable could not be found or run. */
export function resolveExecutable(name: string, path: string | undefined): { file: string } | { error: string } {
  if (name.includes('/')) {
    const problem = executableProblem(name);
    return problem === undefined ? { file: name } : { error: `fork/exec ${name}: ${problem}` };
  }
  for (const dir of (path ?? '').split(delimiter)) {
    const candidate = join(dir === '' ? '.' : dir, name);
    if (executableProblem(candidate) === undefined) return { file: candidate };
  }
  return { error: `exec: "${name}": executable file not found in $PATH` };
}

// Go's wording of the errno values a path lookup can meet.
const ERRNO_TEXT: Readonly<Record<string, string>> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  ENOTDIR: 'not a directory',
  ENAMETOOLONG: 'file name too long',
  ELOOP: 'too many levels of symbolic links',
};

function executableProblem(file: string): string | undefined {
  try {
    if (statSync(file).isDirectory()) return ERRNO_TEXT.EACCES;
    accessSync(file, fsConstants.X_OK);
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    return ERRNO_TEXT[code] ?? code.toLowerCase();
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // No such group: gone, or only just forked and not yet its own group (under load a hang-up can
    // come that soon): then the process itself, which has started nothing yet.
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
}

function ignoreClosed(operation: () => void): void {
  try {
    operation();
  } catch {
    // The terminal is closed (EBADF, EIO): the session is ending anyway.
  }
}


/** A command on pipes: stdout and stderr apart, stdin's end is EOF. */
export function spawnPiped(request: SpawnRequest): LocalProcess {
  const child = spawn(request.file, [...request.args], {
    cwd: request.cwd,
    env: request.env,
    detached: true,
    stdio: 'pipe',
  });
  const outputs: [Readable, 'stdout' | 'stderr'][] = [
    [child.stdout, 'stdout'],
    [child.stderr, 'stderr'],
  ];
  child.stdin.on('error', () => undefined);
  return {
    pid: child.pid ?? -1,
    onOutput: (listener) => {
      for (const [stream, name] of outputs) stream.on('data', (data: Buffer) => listener(name, data));
    },
    onDone: (listener) => {
      child.on('error', () => listener(127));
      child.on('close', (code, signal) => listener(code ?? 128 + (signal === null ? 0 : constants.signals[signal])));
    },
    write: (data, done) => {
      if (!child.stdin.writable) return done(false);
      // Called once the pipe has taken the data, or with EPIPE when the command closed its end.
      child.stdin.write(data, (error) => done(error === undefined || error === null));
    },
    closeStdin: () => child.stdin.end(),
    // Without a terminal there is no window size to change.
    resize: () => undefined,
    pauseOutput: (paused) => {
      for (const [stream] of outputs) {
        if (paused) stream.pause();
        else stream.resume();
      }
    },
    signalGroup: (signal) => {
      if (child.pid !== undefined) signalGroup(child.pid, signal);
    },
  };
}

/** Where a terminal command's exit code is written once it has ended: an escape sequence no output holds. */
function exitMark(): Buffer {
  return Buffer.from(`\u001b]warden-exit;${randomUUID()};`);
}

/** How much of the end of `data` could be the start of `mark`. */
function markStartAtEnd(data: Buffer, mark: Buffer): number {
  for (let length = Math.min(mark.length - 1, data.length); length > 0; length--) {
    if (data.subarray(data.length - length).equals(mark.subarray(0, length))) return length;
  }
  return 0;
}

/**
 * A command on a pseudo-terminal (node-pty, loaded by the caller only when a session asks for one).
 * node-pty drops its end of the terminal 200 ms after the command exits, and output not read by then
 * is lost (under heavy load it is); Nomad's executor reads the terminal to its end before it reports
 * the exit. So the command runs under a small /bin/sh that, once it has ended, writes a mark with its
 * exit code and waits: everything before the mark is the command's whole output; on reading the mark
 * the terminal's group is hung up (as Nomad closes the terminal) and the exit code is the mark's.
 */
export function spawnTerminal(request: SpawnRequest, pty: NodePtyModule): LocalProcess {
  const mark = exitMark();
  // Terminal signals (Ctrl-C typed remotely) are the command's: the holder waits them out. Handlers
  // are reset by exec, so the command gets them as usual.
  const holder = `trap : INT QUIT; "$@"; printf '${mark.toString()}%d\\a' "$?"; exec sleep 2147483647`;
  const terminal = pty.spawn('/bin/sh', ['-c', holder, 'sh', request.file, ...request.args], {
    name: 'xterm',
    cols: 80,
    rows: 24,
    cwd: request.cwd,
    env: request.env,
    encoding: null,
  });
  let output: (data: Buffer) => void = () => undefined;
  let pending = Buffer.alloc(0);
  let markedCode: number | undefined;
  // With `encoding: null` node-pty hands out Buffers; its typings say string.
  terminal.onData((chunk) => {
    if (markedCode !== undefined) return;
    pending = Buffer.concat([pending, Buffer.from(chunk as unknown as Buffer)]);
    const at = pending.indexOf(mark);
    if (at < 0) {
      // Everything but what could be the start of the mark.
      const kept = markStartAtEnd(pending, mark);
      if (pending.length > kept) output(pending.subarray(0, pending.length - kept));
      pending = pending.subarray(pending.length - kept);
      return;
    }
    if (at > 0) output(pending.subarray(0, at));
    pending = pending.subarray(at);
    const end = pending.indexOf(0x07, mark.length);
    // The code's digits may still be on their way.
    if (end < 0) return;
    markedCode = Number(pending.subarray(mark.length, end).toString());
    signalGroup(terminal.pid, 'SIGHUP');
  });
  return {
    pid: terminal.pid,
    onOutput: (listener) => {
      output = (data) => listener('stdout', data);
    },
    onDone: (listener) => {
      // Without a mark the holder itself was ended (hung up, killed): its own exit says how.
      terminal.onExit(({ exitCode, signal }) => listener(markedCode ?? (signal ? 128 + signal : exitCode)));
    },
    // Input or a resize racing the terminal's end has nowhere to go.
    write: (data, done) => {
      ignoreClosed(() => terminal.write(data));
      done(true);
    },
    // With a terminal, closing stdin is not EOF (Ctrl-D is): Nomad does nothing.
    closeStdin: () => undefined,
    resize: (rows, cols) => {
      // Nomad's pty takes 0×0 (a terminal that reports no size); node-pty refuses it, so the size stays.
      if (rows > 0 && cols > 0) ignoreClosed(() => terminal.resize(cols, rows));
    },
    pauseOutput: (paused) => {
      if (paused) terminal.pause();
      else terminal.resume();
    },
    signalGroup: (signal) => signalGroup(terminal.pid, signal),
  };
}
