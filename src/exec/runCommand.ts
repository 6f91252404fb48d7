import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../clock/index.js';
import { ExecError } from '../nomad/exec/errors.js';
import type { ExecOptions, ExecSession, ExecTarget } from './sessions.js';
import { removeFifoCommand, stderrReaderCommand, wrapCommand, type ExecutionOptions } from './executionOptions.js';

export interface RunCommandOptions extends ExecOptions, ExecutionOptions {
  /** With tty=true, deliver stderr on `stderr` instead of merged into the terminal (a second exec reads a fifo). */
  separateStderr?: boolean;
  /** The clock of the wait for the stderr reader after the command ended (default the system's). */
  clock?: Clock;
  /** How long the stderr reader may take to end after its command before the fifo is removed for it (default 1 s). */
  fifoGraceMs?: number;
}

/** The reader of a fifo its command opened ends within this of the command (its end of file). */
const FIFO_GRACE_MS = 1_000;

/**
 * Runs a command the way a code-execution service does (see ExecutionOptions), through an ExecClient
 * or a Supervisor (its sessions then are the supervisor's child actors). With tty and
 * separateStderr, a first exec makes a fifo and copies it to `stderr` while the command's own exec
 * writes its stderr into it; `exitCode` settles only after both, so no output is lost, and the fifo
 * is gone however the two end.
 */
export function runCommand(client: ExecTarget, allocId: string, options: RunCommandOptions): ExecSession {
  if (!(options.tty === true && options.separateStderr === true)) {
    return client.exec(allocId, { ...execOptions(options), command: wrapCommand(options.command, options) });
  }
  const fifo = `${options.fifoDirectory ?? '/tmp'}/warden-stderr-${randomUUID()}.fifo`;
  const stopReader = new AbortController();
  const stopCommand = new AbortController();
  const withStop = (stop: AbortController): AbortSignal =>
    options.signal === undefined ? stop.signal : AbortSignal.any([options.signal, stop.signal]);

  const reader = client.exec(allocId, {
    ...execOptions(options),
    command: stderrReaderCommand(fifo),
    tty: false,
    stdin: undefined,
    signal: withStop(stopReader),
  });
  const command = client.exec(allocId, {
    ...execOptions(options),
    command: wrapCommand(options.command, options, fifo),
    signal: withStop(stopCommand),
  });

  // A reader that ends badly while the command waits for its fifo would leave the command waiting forever.
  let readerFailure: Error | undefined;
  let readerEnded = false;
  const readerDone = reader.exitCode.then(
    (code) => {
      if (code !== 0) readerFailure = new ExecError(`the stderr reader exited with code ${code}`);
    },
    (error: unknown) => {
      readerFailure = error instanceof Error ? error : new ExecError(String(error));
    },
  ).finally(() => {
    readerEnded = true;
  });
  void readerDone.then(() => {
    if (readerFailure !== undefined) stopCommand.abort();
  });

  // However the command ends, the fifo goes: a command that never opened it (ended before it got
  // there, a client gone within a millisecond) leaves its reader waiting and its name in the directory.
  const removeFifo = (): void => {
    try {
      client.exec(allocId, { task: options.task, command: removeFifoCommand(fifo) }).exitCode.catch(() => undefined);
    } catch {
      // The owner has stopped (a supervisor): nothing runs any more, and the fifo stays.
    }
  };
  const clock = options.clock ?? systemClock;
  const readerEndsWithin = (ms: number): Promise<boolean> =>
    new Promise((resolve) => {
      const timer = clock.setTimeout(() => resolve(readerEnded), ms);
      void readerDone.then(() => {
        clock.clearTimeout(timer);
        resolve(true);
      });
    });

  const exitCode = (async (): Promise<number> => {
    let code: number;
    try {
      code = await command.exitCode;
    } catch (error) {
      const cause = readerFailure ?? error;
      stopReader.abort();
      await readerDone;
      removeFifo();
      throw cause;
    }
    // The command's stderr ends with it: its reader follows at once, unless the fifo was never opened.
    // A command killed by a signal (a client gone: SIGQUIT) may have died between its open and its `rm`,
    // leaving the name although its reader followed.
    const readerFollowed = await readerEndsWithin(options.fifoGraceMs ?? FIFO_GRACE_MS);
    if (!readerFollowed || code > 128) removeFifo();
    if (!readerFollowed) await readerDone;
    return code;
  })();
  exitCode.catch(() => undefined);
  return { ...command, stderr: reader.stdout, exitCode };
}

function execOptions(options: RunCommandOptions): ExecOptions {
  const { task, command, tty, stdin, signal, timeoutMs } = options;
  return {
    task,
    command,
    ...(tty === undefined ? {} : { tty }),
    ...(stdin === undefined ? {} : { stdin }),
    ...(signal === undefined ? {} : { signal }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  };
}
