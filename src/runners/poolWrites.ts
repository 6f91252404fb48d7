/**
 * The Nomad writes behind the environment and runner machines (their `io`): template and runner
 * jobs in Poseidon's format, registered with EnforceIndex, runners marked used in their job's meta.
 * The writes to one runner's job go out one at a time (SerialQueues): Nomad checks EnforceIndex
 * before it applies a register, so a used mark sent beside the purge can land after it and
 * re-create the purged job (issue 19, seen on a real 1.1.2). The purges are remembered, so a job
 * written again after one is known for what it is.
 */
import type { EnvironmentIo } from '../../machines/environment.js';
import type { StopReason } from '../../machines/runnerTypes.js';
import { NomadHttpError } from '../nomad/errors.js';
import type { Job } from '../nomad/types.js';
import { errorMessage } from '../errorMessage.js';
import { placed, type JobWrites } from './jobWrites.js';
import { BoundedHistory } from '../boundedHistory.js';
import { SerialQueues } from './serialQueues.js';
import { META_TIMEOUT, META_USED, runnerJob, templateJob, templateJobId, withConfigMeta, type JobBuildOptions, type ResolvedEnvironmentSpec } from './poseidonFormat.js';

/** Writes that lost an EnforceIndex race are read again and retried this many times. */
const CONFLICT_RETRIES = 3;
/** Purged runner jobs remembered (a re-created one is found by its index beyond its purge's). */
const PURGES_KEPT = 10_000;

export interface PoolWritesOptions {
  /** How the jobs are built beyond the spec (a custom template, the network, force pull), as the pools know it now. */
  jobs?: () => JobBuildOptions;
  /** Something the pools could not do and report (a template's own allocation not placed). */
  report(message: string): void;
  /** A runner is stopping: end its executions. */
  endExecutions(runnerId: string, reason: StopReason): void;
}

function isConflict(error: unknown): boolean {
  return error instanceof NomadHttpError && error.isEnforceIndexConflict;
}

export class PoolWrites implements EnvironmentIo {
  /** Each runner's job as last written, with its JobModifyIndex: the next write names it. */
  private readonly written = new Map<string, Job>();
  /** One write at a time per runner job. */
  private readonly runnerWrites = new SerialQueues<string>();
  /** Runner jobs purged, with the raft index of their purge. */
  private readonly purges = new BoundedHistory<number>(PURGES_KEPT);

  constructor(
    private readonly writes: JobWrites,
    private readonly options: PoolWritesOptions,
  ) {}

  /**
   * Creates the template job, or updates the one there (EnforceIndex on what was read). A new
   * environment whose template cannot be placed fails, leaving nothing behind; an update that
   * Nomad took stands, its template's placement only reported.
   */
  async registerTemplate({ spec }: { spec: ResolvedEnvironmentSpec }): Promise<void> {
    const job = templateJob(spec, this.options.jobs?.());
    const { write, created } = await this.enforced(job.ID, async (current) => ({ write: await this.writes.register(job, current?.JobModifyIndex ?? 0), created: current === undefined }));
    if (!created) {
      placed(write).catch((error: unknown) => this.options.report(`environment ${spec.id}: ${errorMessage(error)}`));
      return;
    }
    try {
      await placed(write);
    } catch (error) {
      await this.writes.purge(job.ID).catch(() => undefined);
      throw error;
    }
  }

  async deregisterTemplate({ environmentId }: { environmentId: number }): Promise<void> {
    await this.writes.purge(templateJobId(environmentId));
  }

  /** A new runner job (create only: a job of that ID already there is an error) whose evaluation places it. */
  async registerRunner({ runnerId, spec, forcePull }: { runnerId: string; spec: ResolvedEnvironmentSpec; forcePull: boolean }): Promise<void> {
    // Off the caller's step: the machine that asked is still processing its event.
    await Promise.resolve();
    const job = runnerJob(spec, runnerId, { ...this.options.jobs?.(), forcePull });
    const write = await this.runnerWrites.run(runnerId, () => this.writes.register(job, 0));
    this.written.set(runnerId, { ...job, JobModifyIndex: write.jobModifyIndex });
    await placed(write);
  }

  /**
   * `used = true` and the timeout in the config group's meta: an in-place update, the allocation
   * stays. Nothing is written once `signal` aborted: the runner stopped (destroyed right after its
   * claim), and a mark would only race its purge.
   */
  async markUsed({ runnerId, timeoutMs, signal }: { runnerId: string; timeoutMs: number; signal?: AbortSignal }): Promise<void> {
    await Promise.resolve();
    const meta = { [META_USED]: 'true', [META_TIMEOUT]: String(Math.round(timeoutMs / 1000)) };
    await this.runnerWrites.run(runnerId, () =>
      this.enforced(runnerId, async (current) => {
        if (signal?.aborted === true) return;
        if (current === undefined) throw new Error(`runner job ${runnerId} is gone`);
        const job = withConfigMeta(current, meta);
        const write = await this.writes.register(job, current.JobModifyIndex ?? 0);
        this.written.set(runnerId, { ...job, JobModifyIndex: write.jobModifyIndex });
      }, this.written.get(runnerId)),
    );
  }

  /** Purges the runner's job once every write to it sent before has been answered. */
  async deregisterRunner({ runnerId }: { runnerId: string }): Promise<void> {
    const write = await this.runnerWrites.run(runnerId, () => this.writes.purge(runnerId));
    this.purges.set(runnerId, Math.max(write?.index ?? 0, write?.jobModifyIndex ?? 0));
    this.written.delete(runnerId);
  }

  /** Whether Warden purged this runner job (lately: the last PURGES_KEPT purges). */
  purged(runnerId: string): boolean {
    return this.purges.has(runnerId);
  }

  /** Whether Warden purged this runner job before the write that left it at `modifyIndex` (it was re-created). */
  writtenAfterPurge(runnerId: string, modifyIndex: number): boolean {
    const purgedAt = this.purges.get(runnerId);
    return purgedAt !== undefined && modifyIndex > purgedAt;
  }

  endExecutions(runnerId: string, reason: StopReason): void {
    this.options.endExecutions(runnerId, reason);
  }

  /** Runs a write against the job as known (else as read), reading it again after a lost EnforceIndex race. */
  private async enforced<T>(jobId: string, write: (current: Job | undefined) => Promise<T>, known?: Job): Promise<T> {
    let current = known ?? (await this.writes.read(jobId));
    for (let attempt = 0; ; attempt++) {
      try {
        return await write(current);
      } catch (error) {
        if (!isConflict(error) || attempt >= CONFLICT_RETRIES) throw error;
        current = await this.writes.read(jobId);
      }
    }
  }
}
