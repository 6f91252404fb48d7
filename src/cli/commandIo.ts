import type { Clock } from '../clock/index.js';
import { ConsulClient } from '../consul/client.js';
import { consulConfigWhenSet } from '../consul/config.js';
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
  /** Jitter of reconnect back-off (default Math.random): a recording notes its draws, a replay gives them back. */
  random?: () => number;
}

/** Ctrl-C ends the command cleanly: the supervisor stops and sockets close. */
export function interruptSignal(): AbortSignal {
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  process.once('SIGTERM', () => controller.abort());
  return controller.signal;
}

/** Consul when CONSUL_HTTP_ADDR is set, on the command's clock and transport options (a recording's wire included). */
export function consulClientFor(io: CommandIo, clock: Clock): ConsulClient | undefined {
  const config = consulConfigWhenSet(io.env);
  const { gzip, wire } = io.transport ?? {};
  return (
    config &&
    new ConsulClient(config, {
      clock,
      ...(gzip === undefined ? {} : { gzip }),
      ...(wire === undefined ? {} : { wire }),
      ...(io.random === undefined ? {} : { backoff: { random: io.random } }),
    })
  );
}
