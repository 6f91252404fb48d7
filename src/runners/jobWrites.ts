/**
 * Nomad writes as the runner pools make them: each returns the evaluation it created, which the
 * supervisor's evaluation actor follows on request; `placed()` turns a failed placement into a
 * PlacementFailedError in the Nomad CLI's words. Registrations use EnforceIndex, so two writers of
 * one job cannot overwrite each other without noticing.
 */
import type { EvaluationOutcome } from '../../machines/evaluationOutcome.js';
import type { NomadClient } from '../nomad/client.js';
import { NomadHttpError } from '../nomad/errors.js';
import type { Job, JobListStub } from '../nomad/types.js';
import { PlacementFailedError } from './errors.js';

/** One write and what follows it. */
export interface JobWrite {
  jobId: string;
  /** "" when Nomad created no evaluation. */
  evalId: string;
  /** Raft index of the write. */
  index: number;
  /** The job's JobModifyIndex after it (what the next EnforceIndex write must name). */
  jobModifyIndex: number;
  /** The evaluation's outcome, followed by the supervisor's evaluation actor (undefined without one). */
  evaluation(): Promise<EvaluationOutcome | undefined>;
}

/** What follows an evaluation: the supervisor's monitorEvaluation. */
export type FollowEvaluation = (evalId: string) => Promise<EvaluationOutcome>;

export class JobWrites {
  constructor(
    private readonly nomad: NomadClient,
    private readonly follow: FollowEvaluation,
  ) {}

  private written(jobId: string, response: { EvalID: string; Index?: number; EvalCreateIndex?: number; JobModifyIndex: number }): JobWrite {
    const evalId = response.EvalID;
    let outcome: Promise<EvaluationOutcome | undefined> | undefined;
    return {
      jobId,
      evalId,
      index: response.Index ?? response.EvalCreateIndex ?? 0,
      jobModifyIndex: response.JobModifyIndex,
      evaluation: () => (outcome ??= evalId === '' ? Promise.resolve(undefined) : this.follow(evalId)),
    };
  }

  /**
   * Registers `job` only if its JobModifyIndex on the cluster is `jobModifyIndex` (0: only if it
   * does not exist). A conflict rejects with a NomadHttpError whose isEnforceIndexConflict is true.
   */
  async register(job: Job, jobModifyIndex: number): Promise<JobWrite> {
    return this.written(job.ID, await this.nomad.registerJob(job, { enforceIndex: jobModifyIndex }));
  }

  /** Stops and purges the job; undefined when it does not exist (any more). */
  async purge(jobId: string): Promise<JobWrite | undefined> {
    try {
      return this.written(jobId, await this.nomad.deregisterJob(jobId, { purge: true }));
    } catch (error) {
      if (error instanceof NomadHttpError && error.status === 404) return undefined;
      throw error;
    }
  }

  async scale(jobId: string, group: string, count: number, message?: string): Promise<JobWrite> {
    return this.written(jobId, await this.nomad.scaleJob(jobId, group, count, message === undefined ? {} : { message }));
  }

  /** The current job; undefined when it does not exist. */
  async read(jobId: string): Promise<Job | undefined> {
    try {
      return (await this.nomad.getJob(jobId)).body;
    } catch (error) {
      if (error instanceof NomadHttpError && error.status === 404) return undefined;
      throw error;
    }
  }

  async list(prefix: string): Promise<JobListStub[]> {
    return (await this.nomad.listJobs(prefix)).body;
  }
}

/** Resolves once the write's evaluation placed everything; a failed placement rejects in the CLI's words. */
export async function placed(write: JobWrite): Promise<void> {
  const outcome = await write.evaluation();
  if (outcome !== undefined && !outcome.ok) throw new PlacementFailedError(write.jobId, outcome);
}
