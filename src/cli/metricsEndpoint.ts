import type { Clock } from '../clock/index.js';
import { WardenMetrics } from '../metrics/wardenMetrics.js';
import { serveMetrics, type ListenAddress } from '../metrics/server.js';
import type { Supervisor } from '../supervisor/supervisor.js';
import type { EventStreamMonitor } from '../supervisor/nomadSource.js';

/** `--metrics [addr]` of a command: the supervisor's metrics served at http://addr/metrics. */
export interface MetricsEndpoint {
  readonly url: string;
  /** For createSupervisor's `streamMonitor`. */
  readonly streamMonitor: EventStreamMonitor;
  observe(supervisor: Supervisor): void;
  close(): Promise<void>;
}

export async function startMetricsEndpoint(address: ListenAddress, clock: Clock): Promise<MetricsEndpoint> {
  const metrics = new WardenMetrics({ clock });
  const server = await serveMetrics(metrics, address).catch((error: unknown) => {
    metrics.close();
    throw error;
  });
  return {
    url: server.url,
    streamMonitor: metrics.streamMonitor,
    observe: (supervisor) => void metrics.observe(supervisor),
    close: async () => {
      await server.close();
      metrics.close();
    },
  };
}
