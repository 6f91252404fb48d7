/** What the API's handlers share: the pools they sit on and how the server was configured. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../clock/index.js';
import type { EnvironmentSummary, RunnerPools } from '../runners/pools.js';
import type { EnvironmentSpec } from '../runners/poseidonFormat.js';
import type { Logger } from '../logger.js';
import type { ApiMetrics } from './metrics.js';
import type { PendingExecutions } from './pendingExecutions.js';

/** How runners of environments made through the API run: what Poseidon's API does not say. */
export type EnvironmentDefaults = Pick<EnvironmentSpec, 'driver' | 'driverConfig' | 'datacenters'>;

export interface ApiContext {
  readonly pools: RunnerPools;
  readonly clock: Clock;
  readonly pending: PendingExecutions;
  readonly metrics: ApiMetrics | undefined;
  readonly logger: Logger;
  readonly environmentDefaults: EnvironmentDefaults;
  /** What GET /version answers. */
  readonly version: string;
  /** Poseidon's prewarmingpoolthreshold: /health answers 503 when an environment has less of its pool idle; 0: never. */
  readonly poolAlertThreshold: number;
  readonly bodyLimit: number;
  /** WebSocket URLs are wss:// (the server speaks TLS). */
  readonly secure: boolean;
}

export interface ApiRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
}

export type Handler = (context: ApiContext, request: ApiRequest) => Promise<void>;

/** Environments the API shows: not those being deleted (Poseidon forgets them at once). */
export function visibleEnvironments(pools: RunnerPools): EnvironmentSummary[] {
  return pools.environmentSummaries().filter((environment) => environment.state !== 'deleting' && environment.state !== 'deleted' && environment.state !== 'failed');
}
