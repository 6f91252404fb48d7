/**
 * Warden's public API: everything an embedder needs, one import away. The testing kit (FakeNomad,
 * FakeConsul, recordings) is its own entry point, `warden/testing`, so production code never loads it.
 */
export * from './clock/index.js';
export { processRandom, seededRandom, type RandomSource } from './random.js';
export * from './nomad/index.js';
export * from './streams/index.js';
export * from './health/index.js';
export * from './consul/index.js';
export * from './exec/index.js';
export * from './supervisor/index.js';
export * from './runners/index.js';
export * from './api/index.js';
export * from './inspect/index.js';
export { REDACTED, registerSecret, scrubSecrets, withoutCredentials } from './secrets.js';
export { allocationHealthMachine } from '../machines/allocationHealth.js';
export { evaluationMachine } from '../machines/evaluation.js';
export { execSessionMachine } from '../machines/execSession.js';
export { supervisorMachine } from '../machines/supervisor.js';
export { environmentMachine } from '../machines/environment.js';
export { runnerMachine } from '../machines/runner.js';
export type { EvaluationOutcome } from '../machines/evaluationOutcome.js';
export * from './metrics/index.js';
export * from './nomadChecks/index.js';
