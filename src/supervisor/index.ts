/**
 * The embedding API: `createSupervisor({ nomad, clock, scope, policy, logger })` follows a cluster
 * (or a namespace / job-prefix scope of it) and judges every allocation Nomad would watch.
 *
 *   const supervisor = createSupervisor({ nomad: nomadConfigFromEnv(process.env) });
 *   supervisor.verdicts$.subscribe((v) => ...);
 *   const result = await supervisor.waitForDeployment('web');
 *   await supervisor.stop();
 */
import type { InspectionObserver } from '../health/inspection.js';
import { systemClock, type Clock } from '../clock/index.js';
import { NomadClient } from '../nomad/client.js';
import type { NomadConfig } from '../nomad/config.js';
import type { OptInHealthPolicy } from '../health/policy.js';
import { ConsulClient } from '../consul/client.js';
import type { ConsulConfig } from '../consul/config.js';
import type { RandomSource } from '../random.js';
import { silentLogger, structuredLogger, type LogSink } from '../logger.js';
import { nomadSource, type EventStreamMonitor } from './nomadSource.js';
import { resolveScope, type SupervisorScope } from '../intake/scope.js';
import { Supervisor } from './supervisor.js';

export interface SupervisorOptions {
  /** A client to share, or the configuration to build one from (then closed on stop). */
  nomad: NomadClient | NomadConfig;
  /** Default: the system clock. Tests and replays pass a VirtualClock. */
  clock?: Clock;
  scope?: SupervisorScope;
  /** Judge allocations Nomad does not watch (batch, system, no update block) with this policy. */
  policy?: OptInHealthPolicy;
  /**
   * Where log records go, called as pino is (`info(fields, message)`): a pino instance as it is,
   * console, or any object with debug/info/warn/error. Tokens are removed from every record.
   */
  logger?: LogSink;
  /** Verdicts kept after their allocation's machine is stopped (default 10,000). */
  historySize?: number;
  /**
   * Inspection events of the supervisor, its children and every allocation's health machine: an
   * observer or a function, as XState's `createActor` takes (Warden's InspectionModel.inspect, or
   * the `inspect` of `@statelyai/inspect`'s inspectors).
   */
  inspect?: InspectionObserver;
  /**
   * Consul, for groups judged by their service checks (health_check = "checks"): a client to share or
   * the configuration to build one from (then closed on stop). One blocking query serves every
   * allocation. Without it such groups are left unjudged, with the reason.
   */
  consul?: ConsulClient | ConsulConfig;
  /**
   * The least time a verdict that only time reaches waits after its due time, for updates Nomad's
   * client may not have synced yet (default 1,000 ms; it grows with the delays Warden observes).
   */
  settleMs?: number;
  /** Sees the event stream's batches and connection states as they arrive (metrics: see src/metrics). */
  streamMonitor?: EventStreamMonitor;
  /** Jitter of every retry back-off, in [0, 1) (default: processRandom, seeded from the OS): seed it for reproducible runs; a replay gives the recorded draws. */
  random?: RandomSource;
}

export function createSupervisor(options: SupervisorOptions): Supervisor {
  const clock = options.clock ?? systemClock;
  const ownsClient = !(options.nomad instanceof NomadClient);
  const nomad = options.nomad instanceof NomadClient ? options.nomad : new NomadClient(options.nomad, { clock });
  // The client's namespace (NOMAD_NAMESPACE) is the one to watch unless the scope names others, as the Nomad CLI reads it.
  const requested: SupervisorScope | undefined =
    options.scope?.namespaces?.length || nomad.config.namespace === undefined ? options.scope : { ...options.scope, namespaces: [nomad.config.namespace] };
  const scope = resolveScope(requested);
  const backoff = options.random === undefined ? undefined : { random: options.random };
  const consul =
    options.consul === undefined || options.consul instanceof ConsulClient ? options.consul : new ConsulClient(options.consul, { clock, ...(backoff ? { backoff } : {}) });
  const namespaces = scope.namespaces.includes('*') ? ['*'] : scope.namespaces;
  return new Supervisor({
    nomad,
    clock,
    source: nomadSource(nomad, scope, clock, {
      ...(options.streamMonitor ? { monitor: options.streamMonitor } : {}),
      ...(backoff ? { backoff } : {}),
    }),
    freshness: {
      // A stream of some jobs' events (or of several namespaces) never shows the allocation table's
      // index reached: allocations waiting are read one by one instead.
      namespace: namespaces.length === 1 && scope.jobs.length === 0 ? namespaces[0] : undefined,
      ...(options.settleMs === undefined ? {} : { settleMs: options.settleMs }),
      ...(options.random === undefined ? {} : { random: options.random }),
    },
    ownsClient,
    logger: structuredLogger(options.logger ?? silentLogger, [nomad.config.token, consul?.config.token]),
    ...(requested ? { scope: requested } : {}),
    ...(options.policy ? { policy: options.policy } : {}),
    ...(options.historySize ? { historySize: options.historySize } : {}),
    ...(options.inspect ? { inspect: options.inspect } : {}),
    ...(consul ? { consul, ownsConsul: !(options.consul instanceof ConsulClient) } : {}),
  });
}

export { Supervisor, type SupervisorRuntimeOptions, type WaitForDeploymentOptions } from './supervisor.js';
export { AllocationNotJudgedError, SupervisorError, SupervisorScopeError, SupervisorStoppedError } from '../intake/errors.js';
export type { DeploymentFailureRule, DeploymentResult, UnhealthyAllocation } from '../deployments/deploymentWatch.js';
export { eachInput, type SupervisorInput, type SupervisorInputs } from './inputs.js';
export type { EventStreamMonitor } from './nomadSource.js';
export { structuredLogger, silentLogger, type Logger, type LogFields, type LogLevel, type LogMethod, type LogSink } from '../logger.js';
export { ShardError, shardOf, type JobShard, type SupervisorScope } from '../intake/scope.js';
export type { AllocationRef, ConnectionState, StateChange, SupervisorProblem, VerdictOutcome, VerdictRecord } from './types.js';
export type { DeploymentGatesOptions } from '../deployments/deploymentGates.js';
export type { UnjudgedAllocation } from '../deployments/deploymentWatch.js';
export { FreshnessHorizon, type FreshnessOptions } from '../intake/freshness.js';
