/**
 * One command run in a claimed runner, as Poseidon runs an execution (internal/runner/nomad_runner.go):
 * `env K=V … <shell> -c <command>` in the runner's task over the supervisor's exec, as the
 * unprivileged user unless privileged, NOMAD_* removed, stderr apart under a tty. A time limit on
 * the clock reports `timeout` at once; with a tty the command is sent SIGQUIT (Ctrl-\) and given a
 * grace period, after which (or at once without a tty) its session is ended, and a command that
 * does not stop under a tty takes the runner with it (Poseidon's ErrCannotStopExecution).
 */
import type { Readable, Writable } from 'node:stream';
import type { Clock } from '../clock/index.js';
import { runCommand } from '../exec/runCommand.js';
import type { ExecTarget } from '../exec/sessions.js';
import { errorMessage } from '../errorMessage.js';
import { RunnerPoolError } from './errors.js';

export interface ExecuteOptions {
  /** Shell form: run by the runner's shell (`/bin/bash -c`, as Poseidon). */
  command: string;
  /** Extra environment variables of the command. */
  env?: Readonly<Record<string, string>>;
  /** Seconds; 0 or absent: no limit. */
  timeLimitS?: number;
  /** As the allocation's user (root in Poseidon's images) instead of the unprivileged one. Default false. */
  privileged?: boolean;
  /** With a pseudo-terminal; stderr is still delivered apart. Default false. */
  tty?: boolean;
  /** A Readable to forward, or 'pipe' to write `execution.stdin` yourself; absent: stdin closed at once. */
  stdin?: Readable | 'pipe';
}

export type ExecutionOutcome =
  | { status: 'exited'; exitCode: number }
  /** The time limit, or the runner's inactivity timeout, ended it. */
  | { status: 'timeout'; reason: 'time-limit' | 'inactivity' }
  | { status: 'failed'; error: Error };

export interface Execution {
  readonly id: string;
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly stdin: Writable;
  resize(rows: number, cols: number): void;
  /** Never rejects. */
  readonly outcome: Promise<ExecutionOutcome>;
  /** Ends it (the session closed); the outcome is a failure naming the cancellation. */
  cancel(reason?: string): void;
  /**
   * Stops it as a time limit does (its client went away, as Poseidon handles a closed WebSocket):
   * under a tty SIGQUIT and the grace period, after which the session ends and a command that would
   * not stop takes its runner with it; without a tty the session ends at once. The outcome is a
   * failure naming the interruption.
   */
  interrupt(reason?: string): void;
}

/** How executions run in a runner (the pool's options). */
export interface ExecutionSettings {
  shell: string;
  /** argv prefix that runs the rest as the unprivileged user. */
  setuser: readonly string[];
  /** Where commands run (see ExecutionOptions.workingDirectory); undefined: the task's own. */
  workingDirectory: string | undefined;
  /** The task's variables a command keeps (see ExecutionOptions.keptEnvironment); undefined: all but NOMAD_*. */
  keptEnvironment: readonly string[] | undefined;
  /** The runner sees the host's filesystem (raw_exec): file operations are root only within the working directory. */
  hostFilesystem: boolean;
  /** Why unprivileged executions cannot run in these runners (their check failed); undefined: they can, or it is not known yet. */
  unprivilegedProblem: string | undefined;
  /** Time between SIGQUIT and ending the session of a command past its time limit (Poseidon: 3 s). */
  graceMs: number;
  /** Where the stderr fifo under a terminal is made (default /tmp). */
  fifoDirectory?: string;
}

export const RUNNER_TASK_NAME = 'default-task';

/**
 * Exit codes an OOM kill leaves an exec'd command with (Poseidon's handleExit waits on 128; a SIGKILL
 * gives 137), and how long the runner's own end, naming the OOM kill, may take to follow.
 */
const LIKELY_OOM_EXITS: ReadonlySet<number> = new Set([128, 137]);
const OOM_CONFIRMATION_MS = 1_000;

/** Ctrl-\ : the terminal turns it into SIGQUIT for the foreground process. */
const SIGQUIT_CHARACTER = Buffer.from([0x1c]);

export class ExecutionCancelledError extends RunnerPoolError {
  override name = 'ExecutionCancelledError';
  override readonly code = 'WARDEN_EXECUTION_CANCELLED';
}

function checkEnv(env: Readonly<Record<string, string>>): string[] {
  return Object.entries(env).map(([name, value]) => {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new RunnerPoolError(`${JSON.stringify(name)} is not an environment variable name`);
    return `${name}=${value}`;
  });
}

export interface StartExecution {
  target: ExecTarget;
  clock: Clock;
  allocId: string;
  id: string;
  settings: ExecutionSettings;
  options: ExecuteOptions;
  /** Called once, when it ends however it ends. */
  onEnd(outcome: ExecutionOutcome): void;
  /** A command past its time limit that would not stop: the runner must go. */
  onStuck(): void;
}

/** A running execution and the means to end it from outside (the runner stopping). */
export interface RunningExecution extends Execution {
  end(outcome: ExecutionOutcome): void;
}

export function startExecution(start: StartExecution): RunningExecution {
  const { options, settings, clock } = start;
  const argv = ['env', ...checkEnv(options.env ?? {}), settings.shell, '-c', options.command];
  const stop = new AbortController();
  const tty = options.tty === true;
  const session = runCommand(start.target, start.allocId, {
    clock,
    task: RUNNER_TASK_NAME,
    command: argv,
    tty,
    separateStderr: tty,
    privileged: options.privileged === true,
    setuser: settings.setuser,
    ...(settings.fifoDirectory === undefined ? {} : { fifoDirectory: settings.fifoDirectory }),
    ...(settings.workingDirectory === undefined ? {} : { workingDirectory: settings.workingDirectory }),
    ...(settings.keptEnvironment === undefined ? {} : { keptEnvironment: settings.keptEnvironment }),
    ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
    signal: stop.signal,
  });
  let settled: ExecutionOutcome | undefined;
  let resolveOutcome: (outcome: ExecutionOutcome) => void = () => undefined;
  const outcome = new Promise<ExecutionOutcome>((resolve) => {
    resolveOutcome = resolve;
  });
  const timers: unknown[] = [];
  let exited = false;
  const settle = (result: ExecutionOutcome): void => {
    if (settled !== undefined) return;
    settled = result;
    resolveOutcome(result);
    start.onEnd(result);
  };
  const clearTimers = (): void => {
    for (const timer of timers.splice(0)) clock.clearTimeout(timer);
  };
  session.exitCode.then(
    (exitCode) => {
      // An OOM kill ends the command before Nomad reports why: the runner's stop, if it follows, says so instead.
      if (LIKELY_OOM_EXITS.has(exitCode)) clock.setTimeout(() => settle({ status: 'exited', exitCode }), OOM_CONFIRMATION_MS);
      else settle({ status: 'exited', exitCode });
    },
    (error: unknown) => settle({ status: 'failed', error: error instanceof Error ? error : new RunnerPoolError(errorMessage(error)) }),
  ).finally(() => {
    exited = true;
    clearTimers();
  });

  // Poseidon's way to stop a command: under a tty, SIGQUIT and a grace period (then the session
  // ends, and a command that would not stop takes its runner); without one, the session ends at once.
  let stopping = false;
  const stopCommand = (): void => {
    if (stopping || exited) return;
    stopping = true;
    if (!tty) return stop.abort();
    try {
      session.stdin.write(SIGQUIT_CHARACTER);
    } catch {
      // stdin already ended: the grace period decides.
    }
    timers.push(clock.setTimeout(() => {
      if (exited) return;
      stop.abort();
      start.onStuck();
    }, settings.graceMs));
  };

  const limitMs = (options.timeLimitS ?? 0) * 1000;
  if (limitMs > 0) {
    timers.push(clock.setTimeout(() => {
      settle({ status: 'timeout', reason: 'time-limit' });
      stopCommand();
    }, limitMs));
  }

  return {
    id: start.id,
    stdout: session.stdout,
    stderr: session.stderr,
    stdin: session.stdin,
    resize: (rows, cols) => session.resize(rows, cols),
    outcome,
    cancel: (reason = 'the execution was cancelled') => {
      settle({ status: 'failed', error: new ExecutionCancelledError(reason) });
      stop.abort();
    },
    interrupt: (reason = 'the execution was interrupted') => {
      settle({ status: 'failed', error: new ExecutionCancelledError(reason) });
      stopCommand();
    },
    end: (result) => {
      settle(result);
      stop.abort();
    },
  };
}
