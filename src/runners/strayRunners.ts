/**
 * Runner jobs on the cluster that none of the pools' runners stands for, found as Nomad registers
 * them (the event stream's JobRegistered) and on recovery: the defence in depth behind the ordered
 * writes of poolWrites.ts. A job Warden purged that was written again afterwards, or one marked used
 * at version 0, was re-created by a write that raced its purge: nobody holds it, so it is purged and
 * reported. Any other runner job Warden does not know (another Warden's, a Poseidon's, `nomad job
 * run`) is reported once and left alone, as recovery leaves orphans.
 */
import type { Job } from '../nomad/types.js';
import { errorMessage } from '../errorMessage.js';
import { BoundedHistory } from '../boundedHistory.js';
import type { JobWrites } from './jobWrites.js';
import type { PoolProblem } from './pools.js';
import type { PoolWrites } from './poolWrites.js';
import { environmentOfRunner, isRecreatedRunner } from './poseidonFormat.js';

export interface StrayRunnersOptions {
  writes: JobWrites;
  poolWrites: PoolWrites;
  /** A runner of the pools has this job (an actor, stopping ones included). */
  known(jobId: string): boolean;
  environmentKnown(environmentId: number): boolean;
  report(problem: PoolProblem): void;
}

/** Unknown jobs reported, so that each is reported once. */
const REPORTED_KEPT = 10_000;

export class StrayRunners {
  private readonly reported = new BoundedHistory<true>(REPORTED_KEPT);
  /** Jobs being looked at or purged now: one at a time per job. */
  private readonly looking = new Set<string>();

  constructor(private readonly options: StrayRunnersOptions) {}

  /** A runner job Nomad registered (an event's payload): purged if re-created, reported if unknown. */
  async examine(event: Job): Promise<void> {
    const { known, poolWrites } = this.options;
    const environmentId = environmentOfRunner(event.ID);
    if (environmentId === undefined || known(event.ID) || this.looking.has(event.ID)) return;
    const modifyIndex = event.ModifyIndex ?? event.JobModifyIndex ?? 0;
    // A write Warden made before its own purge, reported late: old news.
    if (!poolWrites.writtenAfterPurge(event.ID, modifyIndex) && poolWrites.purged(event.ID) && !isRecreatedRunner(event)) return;
    this.looking.add(event.ID);
    try {
      // The event may be old (a stream resumed from an earlier index): what is there now decides.
      const job = await this.options.writes.read(event.ID);
      if (job === undefined || known(job.ID)) return;
      if (poolWrites.writtenAfterPurge(job.ID, job.ModifyIndex ?? job.JobModifyIndex ?? 0)) {
        await this.purge(job.ID, environmentId, `was written again after Warden purged it (a write that raced its purge)`);
      } else if (isRecreatedRunner(job) && this.options.environmentKnown(environmentId)) {
        await this.purge(job.ID, environmentId, 'is marked used at version 0: a used mark re-created it after its purge');
      } else if (!this.reported.has(job.ID)) {
        this.reported.set(job.ID, true);
        const whose = this.options.environmentKnown(environmentId) ? `of environment ${environmentId} is not one of Warden's runners` : 'belongs to no environment on the cluster';
        this.options.report({ kind: this.options.environmentKnown(environmentId) ? 'unknown-runner' : 'orphan-runner', environmentId, jobId: job.ID, message: `runner job ${job.ID} ${whose}; left alone` });
      }
    } catch (error) {
      this.options.report({ kind: 'unknown-runner', environmentId, jobId: event.ID, message: `runner job ${event.ID} could not be read: ${errorMessage(error)}` });
    } finally {
      this.looking.delete(event.ID);
    }
  }

  /** Runner jobs recovery found re-created (used at version 0): purged and reported. */
  async purgeRecreated(jobIds: readonly string[]): Promise<void> {
    const strays = jobIds.filter((jobId) => !this.options.known(jobId) && !this.looking.has(jobId));
    for (const jobId of strays) this.looking.add(jobId);
    await Promise.all(strays.map(async (jobId) => {
      try {
        await this.purge(jobId, environmentOfRunner(jobId), 'is marked used at version 0: a used mark re-created it after its purge');
      } finally {
        this.looking.delete(jobId);
      }
    }));
  }

  private async purge(jobId: string, environmentId: number | undefined, why: string): Promise<void> {
    const where = environmentId === undefined ? {} : { environmentId };
    try {
      await this.options.poolWrites.deregisterRunner({ runnerId: jobId });
      this.options.report({ kind: 'recreated-runner', ...where, jobId, message: `runner job ${jobId} ${why}; purged` });
    } catch (error) {
      this.options.report({ kind: 'recreated-runner', ...where, jobId, message: `runner job ${jobId} ${why}, and could not be purged: ${errorMessage(error)}` });
    }
  }
}
