import { randomUUID } from 'node:crypto';
import { ExecError } from '../nomad/exec/errors.js';
import type { ExecOptions, ExecSession, ExecTarget } from './sessions.js';
import { removeFifoCommand, stderrReaderCommand, wrapCommand, type ExecutionOptions } from './executionOptions.js';

export interface RunCommandOptions extends ExecOptions, ExecutionOptions {
  /** With tty=true, deliver stderr on `stderr` instead of merged into the terminal (a second exec reads a fifo). */
  separateStderr?: boolean;
}

/**
 * Runs a command the way a code-execution service does (see ExecutionOptions), through an ExecClient
 * or a Supervisor (its sessions then are the supervisor's child actors). With tty and
 * separateStderr, a first exec makes a fifo and copies it to `stderr` while the command's own exec
 * writes its stderr into it; `exitCode` settles only after both, so no output is lost.
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
  const readerDone = reader.exitCode.then(
    (code) => {
      if (code !== 0) readerFailure = new ExecError(`the stderr reader exited with code ${code}`);
    },
    (error: unknown) => {
      readerFailure = error instanceof Error ? error : new ExecError(String(error));
    },
  );
  void readerDone.then(() => {
    if (readerFailure !== undefined) stopCommand.abort();
  });

  const exitCode = (async (): Promise<number> => {
    try {
      const code = await command.exitCode;
      await readerDone;
      return code;
    } catch (error) {
      const cause = readerFailure ?? error;
      stopReader.abort();
      await readerDone;
      // The fifo outlives a session cut short before both its ends were open.
      try {
        client.exec(allocId, { task: options.task, command: removeFifoCommand(fifo) }).exitCode.catch(() => undefined);
      } catch {
        // The owner has stopped (a supervisor): nothing runs any more, and the fifo stays.
      }
      throw cause;
    }
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
