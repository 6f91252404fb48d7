import type { Clock } from '../clock/index.js';
import { ConsulClient } from '../consul/client.js';
import { consulConfigWhenSet } from '../consul/config.js';
import type { CommandIo } from './commandIo.js';

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
