/** Consul as a source of service-check health: configuration, the one blocking query, the mapping to allocations. */
export { consulConfigFromEnv, consulConfigWhenSet, consulAddress, parseGoBool, DEFAULT_CONSUL_ADDRESS, type ConsulConfig } from './config.js';
export {
  ConsulClient,
  type ConsulChecksUpdate,
  type ConsulClientOptions,
  type ConsulHealthCheck,
  type ConsulResponse,
  type HealthChecksOptions,
  type WatchHealthChecksOptions,
} from './client.js';
export { checksByAllocation, checkViewsFor, type AllocationCheck, type AllocationWorkloads } from './checkViews.js';
export { ConsulCheckFanOut, type ChecksListener } from './checkFanOut.js';
export { ConsulConfigError, ConsulError, ConsulHttpError, ConsulUnavailableError } from './errors.js';
