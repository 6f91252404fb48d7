/**
 * Deploy gates: callers waiting for a job version's deployment (waitForDeployment). Each waits on a
 * DeploymentWatch fed with the cluster's deployments, the job's evaluations and Warden's verdicts; it
 * resolves once Nomad has ended the deployment and Warden has judged every allocation of it.
 */
import { evaluationOutcome, isTerminalEvaluation } from '../../machines/evaluationOutcome.js';
import type { NomadRules } from '../../machines/nomadRules.js';
import type { NomadClient } from '../nomad/client.js';
import type { Deployment, Evaluation, Job } from '../nomad/types.js';
import type { VerdictRecord } from '../intake/types.js';
import type { Unjudged } from '../intake/verdictBook.js';
import type { Logger } from '../logger.js';
import { SupervisorStoppedError } from '../intake/errors.js';
import { errorMessage } from '../errorMessage.js';
import { DeploymentWatch, type DeploymentResult, type StillJudged } from './deploymentWatch.js';
import { retryDelay } from '../nomad/backoff.js';
import { isRetryable } from '../nomad/errors.js';
import type { Clock } from '../clock/index.js';

export interface WaitForDeploymentOptions {
  /** Job version to wait for; default the job's current version. */
  version?: number;
  namespace?: string;
  /**
   * End at the first allocation judged unhealthy (or group that cannot be placed), rather than when
   * Nomad's deployment watcher ends the deployment.
   */
  failFast?: boolean;
}

export interface DeploymentGatesOptions {
  readonly nomad: Pick<NomadClient, 'getJob' | 'getJobVersion' | 'query'>;
  /** For the retries of a failed read. */
  readonly clock: Clock;
  readonly logger: Logger;
  /** Verdicts reached so far (for a gate that starts after some). */
  readonly verdicts: () => Iterable<VerdictRecord>;
  /** Allocations left unjudged so far. */
  readonly unjudged: () => Iterable<Unjudged>;
  /** How many allocations of a deployment Warden is still judging. */
  readonly undecided: (deploymentId: string) => number;
  /** Which, and where each is (for a gate that gives up). */
  readonly stillJudged: (deploymentId: string) => readonly StillJudged[];
  /** Whether the supervisor has read the cluster as it is (its first listing is in): until then it may not know every allocation. */
  readonly caughtUp: () => boolean;
  /** The rules of the cluster's Nomad release, once known. */
  readonly rules?: () => NomadRules | undefined;
}

interface Waiter {
  readonly watch: DeploymentWatch;
  resolve(result: DeploymentResult): void;
  reject(error: Error): void;
}

const WATCHED_TYPES: ReadonlySet<string> = new Set(['service', 'system']);

/** Why Nomad runs no deployment for this job version, or undefined when it does. */
export function noDeploymentReason(job: Job): string | undefined {
  const type = job.Type ?? 'service';
  if (!WATCHED_TYPES.has(type)) return `Nomad runs no deployments for ${type} jobs`;
  const groups = job.TaskGroups ?? [];
  if (groups.length === 0) return 'the job has no task groups';
  const deployed = groups.some((group) => {
    const update = group.Update ?? job.Update;
    return update !== null && update !== undefined && update.MaxParallel !== 0;
  });
  return deployed ? undefined : 'no task group has an update block (max_parallel > 0)';
}

export class DeploymentGates {
  private readonly waiters = new Set<Waiter>();
  /** Retry pauses under way, ended at once when the gates stop. */
  private readonly pauses = new Set<() => void>();
  private stopped = false;
  /** Whether the waiters' results are to be checked at the end of the current step (many verdicts, one check). */
  private checkDue = false;

  constructor(private readonly options: DeploymentGatesOptions) {}

  /** See Supervisor.waitForDeployment. */
  async wait(jobId: string, namespace: string, options: WaitForDeploymentOptions): Promise<DeploymentResult> {
    const { nomad } = this.options;
    const version = options.version ?? (await nomad.getJob(jobId, { namespace })).body.Version ?? 0;
    const job = await nomad.getJobVersion(jobId, version, { namespace }).catch(() => undefined);
    if (this.stopped) throw new SupervisorStoppedError(`the deployment of ${jobId}`);
    const none = job && noDeploymentReason(job);
    if (none !== undefined) {
      return { ok: false, jobId, version, deploymentId: undefined, reason: `no deployment to judge: ${none}`, rule: 'nothing-to-judge', unhealthy: [] };
    }
    const watch = new DeploymentWatch(jobId, namespace, version, { failFast: options.failFast ?? false, ...(this.options.rules ? { rules: this.options.rules } : {}) });
    const result = new Promise<DeploymentResult>((resolve, reject) => this.waiters.add({ watch, resolve, reject }));
    // It may settle (or the gates stop) while the reads below are awaited: handled by the caller.
    result.catch(() => undefined);
    for (const record of this.options.verdicts()) this.onVerdict(record);
    for (const record of this.options.unjudged()) this.onUnjudged(record);
    // Restart safety: the deployment may have started (or ended) before we watched. The version's
    // own, not the job's latest: a gate on an older version (the job registered again since, or
    // reverted) reads the deployment of that version. Read until it is had: the stream brings only
    // what comes, so an ended deployment is known from this read alone.
    await this.readUntilHad(watch, "the job's deployments", async () => {
      const deployments = await nomad.query<Deployment[] | null>(`/v1/job/${encodeURIComponent(jobId)}/deployments`, { namespace });
      for (const deployment of deployments.body ?? []) if (deployment.JobVersion === version) this.onDeployment(deployment);
    });
    // --fail-fast: a group that could not be placed before we watched ended it already (the stream
    // brings only what comes).
    if (options.failFast) {
      await this.readUntilHad(watch, "the job's evaluations", async () => {
        const evaluations = await nomad.query<Evaluation[] | null>(`/v1/job/${encodeURIComponent(jobId)}/evaluations`, { namespace });
        for (const evaluation of evaluations.body ?? []) this.onEvaluation(evaluation);
      });
    }
    return result;
  }

  /** What each gate still waits for (see DeploymentWatch.waitingFor), by job and version. */
  waiting(): { jobId: string; namespace: string; version: number; waitingFor: string }[] {
    return [...this.waiters].map(({ watch }) => ({
      jobId: watch.jobId,
      namespace: watch.namespace,
      version: watch.version,
      waitingFor: this.options.caughtUp() ? watch.waitingFor(this.options.stillJudged) : 'the event stream has not delivered the cluster as it is yet',
    }));
  }

  /**
   * Runs `read` until it succeeds, the gate has its result or the gates stop; a failure that a retry
   * cannot mend (a refusal) is given up at once. Each failure is kept as the watch's read problem.
   */
  private async readUntilHad(watch: DeploymentWatch, what: string, read: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      let failure: unknown;
      try {
        await read();
        watch.readProblem = undefined;
        return;
      } catch (error) {
        failure = error;
        watch.readProblem = errorMessage(error);
        this.options.logger.warn(`could not read ${what}${isRetryable(error) ? '; retrying' : ''}`, { jobId: watch.jobId, error: watch.readProblem, attempt });
        if (!isRetryable(error)) return;
      }
      await this.pause(retryDelay(attempt, failure));
      if (this.stopped || ![...this.waiters].some((waiter) => waiter.watch === watch)) return;
    }
  }

  /** Waits `ms` on the clock, or until the gates stop. */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = (): void => {
        this.pauses.delete(wake);
        this.options.clock.clearTimeout(handle);
        resolve();
      };
      const handle = this.options.clock.setTimeout(wake, ms);
      this.pauses.add(wake);
    });
  }

  onVerdict(record: VerdictRecord): void {
    const { alloc } = record;
    this.settle((watch) => {
      if (watch.jobId === alloc.jobId && watch.namespace === alloc.namespace) watch.onVerdict(alloc.allocId, alloc.deploymentId, alloc.name, record.outcome);
    });
  }

  onUnjudged({ alloc, reason }: Unjudged): void {
    this.settle((watch) => {
      if (watch.jobId === alloc.jobId && watch.namespace === alloc.namespace) watch.onUnjudged(alloc.allocId, alloc.deploymentId, alloc.name, reason);
    });
  }

  /** Something a gate may have waited for has happened (the supervisor caught up with the cluster). */
  recheck(): void {
    this.settle(() => undefined);
  }

  onDeployment(deployment: Deployment): void {
    this.settle((watch) => watch.onDeployment(deployment));
  }

  onEvaluation(evaluation: Evaluation): void {
    if (!isTerminalEvaluation(evaluation)) return;
    const outcome = evaluationOutcome(evaluation, [evaluation.ID]);
    this.settle((watch) => {
      if (watch.jobId === evaluation.JobID) watch.onEvaluation(outcome, evaluation.DeploymentID);
    });
  }

  stop(): void {
    this.stopped = true;
    for (const wake of [...this.pauses]) wake();
    for (const waiter of this.waiters) waiter.reject(new SupervisorStoppedError(`the deployment of ${waiter.watch.jobId}`));
    this.waiters.clear();
  }

  /**
   * Feeds every waiter's watch, then checks their results once the current step is over: a freshness
   * round decides thousands of allocations in one step, and each check of an ended deployment counts
   * its allocations still being judged.
   */
  private settle(feed: (watch: DeploymentWatch) => void): void {
    if (this.waiters.size === 0) return;
    for (const waiter of this.waiters) feed(waiter.watch);
    if (this.checkDue) return;
    this.checkDue = true;
    queueMicrotask(() => {
      this.checkDue = false;
      this.check();
    });
  }

  private check(): void {
    if (this.stopped || !this.options.caughtUp()) return;
    for (const waiter of this.waiters) {
      const { deploymentId } = waiter.watch;
      const result = deploymentId === undefined ? undefined : waiter.watch.result(() => this.options.undecided(deploymentId));
      if (!result) continue;
      this.waiters.delete(waiter);
      waiter.resolve(result);
    }
  }
}
