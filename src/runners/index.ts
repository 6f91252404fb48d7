/** Runner pools: Poseidon's environments and runners as actors of a supervisor (see pools.ts). */
export { createRunnerPools, RunnerPools, type EnvironmentInfo, type EnvironmentState, type EnvironmentStatistics, type EnvironmentSummary, type PoolProblem, type RunnerPoolsOptions, type RunnerStartup } from './pools.js';
export { Runner, type FileContent, type RunnerInfo, type RunnerState } from './runner.js';
export { ExecutionCancelledError, type ExecuteOptions, type Execution, type ExecutionOutcome } from './execution.js';
export type { FileHeader, FileToWrite, UpdateFilesRequest } from './files.js';
export { JobWrites, placed, type FollowEvaluation, type JobWrite } from './jobWrites.js';
export {
  CONFIG_GROUP, RUNNER_GROUP, RUNNER_TASK, TEMPLATE_JOB_PREFIX, checkEnvironmentSpec, environmentOfRunner, environmentOfTemplate, runnerJob, runnerJobId,
  runnerMeta, specOfJob, templateJob, templateJobId, type EnvironmentSpec, type ResolvedEnvironmentSpec, type RunnerDriver, type RunnerMeta,
} from './poseidonFormat.js';
export {
  InvalidEnvironmentError, NoIdleRunnerError, PlacementFailedError, PoolsStoppedError, RunnerFileError, RunnerFileNotFoundError, RunnerPoolError,
  RunnerStoppedError, RunnerUnavailableError, UnknownEnvironmentError, UnknownRunnerError,
} from './errors.js';
export { RunnerAllocationTracker, type AllocationCallbacks, type RunnerAllocationTrackerOptions } from './allocationCallbacks.js';
export type { MappedPort } from '../../machines/runnerTypes.js';
