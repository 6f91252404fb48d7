import type { Clock } from '../clock/index.js';
import type { NomadTransportOptions } from '../nomad/transport.js';
import type { LogSink } from '../supervisor/logger.js';

/** Where a command writes and what it runs on; the CLI passes the process's, tests their own. */
export interface CommandIo {
  env: Readonly<Record<string, string | undefined>>;
  write(line: string): void;
  clock?: Clock;
  /** Ends a long-running command (Ctrl-C). */
  signal?: AbortSignal;
  color?: boolean;
  /** Options of the Nomad client (tests on a VirtualClock turn gzip off: gunzip runs on libuv's thread pool). */
  transport?: Omit<NomadTransportOptions, 'clock'>;
  /** Where the supervisor's log records go (the command line's pino logger on stderr); none: silence. */
  logger?: LogSink;
}

/** Ctrl-C ends the command cleanly: the supervisor stops and sockets close. */
export function interruptSignal(): AbortSignal {
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  process.once('SIGTERM', () => controller.abort());
  return controller.signal;
}
