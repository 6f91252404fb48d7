/**
 * Allocation updates joined with the job version they run. Job and Deployment events of a batch
 * feed the cache before its allocations are joined (a registration and its placements can share
 * a raft index). An allocation whose job cannot be had is still delivered, with the reason.
 */
import { catchError, concatMap, from, map, of, type OperatorFunction } from 'rxjs';
import { isAllocationEvent } from '../nomad/eventFrames.js';
import type { EventBatch } from '../nomad/eventStream.js';
import type { Allocation, Job } from '../nomad/types.js';
import { JobUnavailableError, type JobCache } from './jobCache.js';
import { errorMessage } from '../errorMessage.js';

export interface JoinedAllocation {
  allocation: Allocation;
  /** The job version the allocation runs; undefined when it could not be had (see jobError). */
  job: Job | undefined;
  jobError?: JobUnavailableError;
  /** Index of the batch that carried the update. */
  index: number;
  /** A synthetic update from a reconnect's listing. */
  resync: boolean;
}

function unavailable(allocation: Allocation, error: unknown): JobUnavailableError {
  if (error instanceof JobUnavailableError) return error;
  const reason = errorMessage(error);
  return new JobUnavailableError(allocation.Namespace ?? 'default', allocation.JobID, undefined, reason, { cause: error });
}

/** Maps event batches to allocation updates with their jobs, in stream order. */
export function joinJobs(cache: JobCache): OperatorFunction<EventBatch, JoinedAllocation> {
  return concatMap((batch: EventBatch) => {
    for (const event of batch.events) cache.observe(event);
    const allocations = batch.events.filter(isAllocationEvent).map((event) => event.Payload.Allocation);
    return from(allocations).pipe(
      concatMap((allocation) =>
        from(cache.jobFor(allocation)).pipe(
          map((job): JoinedAllocation => ({ allocation, job, index: batch.index, resync: batch.resync })),
          catchError((error: unknown) =>
            of<JoinedAllocation>({ allocation, job: undefined, jobError: unavailable(allocation, error), index: batch.index, resync: batch.resync }),
          ),
        ),
      ),
    );
  });
}
