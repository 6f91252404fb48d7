/** Stream pipelines over the Nomad event stream: the job cache and the allocation/job join. */
export { JobCache, JobUnavailableError, isJobPurge, type JobCacheOptions, type JobSource } from './jobCache.js';
export { joinJobs, type JoinedAllocation } from './joinJobs.js';
