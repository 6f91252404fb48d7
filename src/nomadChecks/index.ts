/** Nomad's own service checks (provider = "nomad"): the per-allocation results, polled and fed to the health rules. */
export { checkViewsFromResults, type NomadCheckResult } from './checkResults.js';
export { NOMAD_CHECKS_CONCURRENCY, NOMAD_CHECKS_INTERVAL_MS, NomadCheckPoller, type NomadCheckPollerOptions } from './checkPoller.js';
export { ServiceCheckSources } from './checkSources.js';
