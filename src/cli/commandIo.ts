import type { Clock } from '../clock/index.js';
import type { NomadTransportOptions } from '../nomad/transport.js';
import type { LogSink } from '../logger.js';
import type { RandomSource } from '../random.js';
import { signalExitCode } from './exitCodes.js';

/** Where a command writes and what it runs on; the CLI passes the process's, tests their own. */
export interface CommandIo {
  env: Readonly<Record<string, string | undefined>>;
  /** A line of the command's output (stdout). */
  write(line: string): void;
  /** A line about a failure (stderr); without it, errors go to `write`. */
  error?(line: string): void;
  clock?: Clock;
  /** Ends a long-running command (Ctrl-C); its reason is the signal's name. */
  signal?: AbortSignal;
  color?: boolean;
  /** Options of the Nomad client (tests on a VirtualClock turn gzip off: gunzip runs on libuv's thread pool). */
  transport?: Omit<NomadTransportOptions, 'clock'>;
  /** Where the supervisor's log records go (the command line's pino logger on stderr); none: silence. */
  logger?: LogSink;
  /** Jitter of reconnect back-off (default: processRandom): a recording notes its draws, a replay gives them back. */
  random?: RandomSource;
}

/**
 * Ctrl-C (SIGINT) or SIGTERM ends the command cleanly: the supervisor stops and sockets close. The
 * signal's reason is the signal's name. Only the first one: a second Ctrl-C kills as usual.
 */
export function interruptSignal(): AbortSignal {
  const controller = new AbortController();
  const stop = (signal: NodeJS.Signals): void => controller.abort(signal);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return controller.signal;
}

/** The exit code of a command its signal ended: 130 for Ctrl-C, 143 for SIGTERM (128 + the signal). */
export function interruptedExitCode(signal: AbortSignal | undefined): number {
  const reason: unknown = signal?.reason;
  return signalExitCode(reason === 'SIGTERM' ? 'SIGTERM' : 'SIGINT');
}

/** Colour when the stream is a terminal and NO_COLOR is unset or empty (no-color.org). */
export function useColor(stream: { isTTY?: boolean }, env: Readonly<Record<string, string | undefined>>): boolean {
  return stream.isTTY === true && (env.NO_COLOR ?? '') === '';
}

/** The process's own streams, environment and Ctrl-C, for a command run from the command line. */
export function processIo(): CommandIo & { error(line: string): void } {
  return {
    env: process.env,
    write: (line) => process.stdout.write(`${line}\n`),
    error: (line) => process.stderr.write(`${line}\n`),
    signal: interruptSignal(),
    color: useColor(process.stdout, process.env),
  };
}
