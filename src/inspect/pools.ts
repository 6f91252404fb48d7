/** Runner pools (src/runners) as the inspector shows them: field by field, never the driver config (it may hold credentials). */
import type { EnvironmentInfo } from '../runners/pools.js';
import type { PoolInfo } from './schema.js';
import { isoTime } from './time.js';

/** What the model reads of the runner pools (RunnerPools). */
export interface InspectedPools {
  readonly changes$: { subscribe(next: (environmentId: number) => void): { unsubscribe(): void } };
  environment(id: number): EnvironmentInfo | undefined;
  environments(): EnvironmentInfo[];
}

export function poolInfo(environment: EnvironmentInfo): PoolInfo {
  return {
    id: environment.id,
    state: environment.state,
    driver: environment.spec.driver,
    poolSize: environment.spec.prewarmingPoolSize,
    idle: environment.idleRunners,
    used: environment.usedRunners,
    provisioning: environment.provisioningRunners,
    backingOff: environment.backingOff,
    lastError: environment.lastError,
    runners: environment.runners.map((runner) => ({
      id: runner.id,
      state: runner.state,
      inactivityTimeoutS: runner.inactivityTimeoutS,
      executions: runner.executions.map(({ kind, startedAt }) => ({ kind, startedAt: isoTime(startedAt) })),
    })),
  };
}

export function deletedPool(id: number): PoolInfo {
  return { id, state: 'deleted', driver: '', poolSize: 0, idle: 0, used: 0, provisioning: 0, backingOff: false, lastError: null, runners: [] };
}
