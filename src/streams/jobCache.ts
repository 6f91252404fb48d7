/**
 * Jobs by (namespace, job id, version), for joining allocations with the job they run:
 * allocation events do not carry the Job.
 *
 * - Fed for free by Job events (and by a full allocation's embedded Job).
 * - On a miss, ONE request per (namespace, job, version), however many allocations ask at once:
 *   concurrent askers share the request in flight, and its answer (or failure) is kept.
 *   GET /v1/job/:id/versions answers every version Nomad keeps, so one request fills them all.
 * - A failure is kept for `failureTtlMs` on the clock (an outage does not turn into one request
 *   per allocation), then asked again.
 * - A purge forgets the job (isJobPurge): a job registered again under the same ID starts over
 *   at version 0 with another spec.
 * - The version an allocation runs: its own (JobVersion in list stubs, Job.Version when embedded),
 *   else its deployment's JobVersion, else the newest version registered at or before the
 *   allocation was created (JobModifyIndex <= CreateIndex).
 */
import type { Clock } from '../clock/index.js';
import { systemClock } from '../clock/index.js';
import type { NomadClient } from '../nomad/client.js';
import { NomadError } from '../nomad/errors.js';
import { isDeploymentEvent, isJobEvent } from '../nomad/eventFrames.js';
import type { Allocation, Deployment, Job, JobEvent, NomadEvent } from '../nomad/types.js';
import { errorMessage } from '../errorMessage.js';
import { BoundedHistory } from '../boundedHistory.js';

/**
 * Whether a Job event is a purge: `Deleted: true` (Nomad 2.0+), or (Nomad 1.8+, which publishes the
 * deleted job as it was) a JobDeregistered whose job was last written before this event's index;
 * a stop writes the job at the event's index (nomad/state/events.go eventFromChange).
 */
export function isJobPurge(event: JobEvent): boolean {
  if (event.Payload.Deleted === true) return true;
  const written = event.Payload.Job.ModifyIndex;
  return event.Type === 'JobDeregistered' && typeof written === 'number' && written < event.Index;
}

/** The job of an allocation could not be had; the allocation is reported with this, not dropped. */
export class JobUnavailableError extends NomadError {
  readonly code = 'WARDEN_JOB_UNAVAILABLE';

  constructor(
    readonly namespace: string,
    readonly jobId: string,
    readonly version: number | undefined,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`job ${namespace}/${jobId}${version === undefined ? '' : ` version ${version}`} unavailable: ${reason}`, options);
    this.name = 'JobUnavailableError';
  }
}

export interface JobCacheOptions {
  clock?: Clock;
  /** Job versions kept, least recently used dropped first (default 2,000). */
  maxEntries?: number;
  /** How long a failed lookup is remembered before being asked again (default 30 s). */
  failureTtlMs?: number;
}

/** The client calls the cache makes. */
export type JobSource = Pick<NomadClient, 'getJobVersions' | 'getJob' | 'getDeployment'>;

type Entry = { job: Job } | { error: JobUnavailableError; until: number };

const DEFAULT_NAMESPACE = 'default';
const key = (namespace: string, jobId: string, version: number | 'latest' | 'versions' | ''): string =>
  `${namespace}\u0000${jobId}\u0000${version}`;

function namespaceOf(value: { Namespace?: string }): string {
  return value.Namespace === undefined || value.Namespace === '' ? DEFAULT_NAMESPACE : value.Namespace;
}


export class JobCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<unknown>>();
  /** Deployment ID → its job version, or the time until which a failed lookup is not repeated. */
  private readonly deployments = new Map<string, { version: number } | { until: number }>();
  /** Version → JobModifyIndex per job, for the registration-order rule (the last maxEntries jobs). */
  private readonly registrations: BoundedHistory<Map<number, number>>;
  private readonly clock: Clock;
  private readonly maxEntries: number;
  /** How long a failed lookup is remembered before it is asked again. */
  readonly failureTtlMs: number;

  constructor(
    private readonly source: JobSource,
    options: JobCacheOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.maxEntries = options.maxEntries ?? 2_000;
    this.failureTtlMs = options.failureTtlMs ?? 30_000;
    this.registrations = new BoundedHistory(this.maxEntries);
  }

  /** Takes what an event carries: the Job of Job events (a purge forgets it), the job version of Deployment events. */
  observe(event: NomadEvent): void {
    if (isJobEvent(event)) {
      if (isJobPurge(event)) this.forget(namespaceOf(event.Payload.Job), event.Payload.Job.ID);
      else this.remember(event.Payload.Job);
    } else if (isDeploymentEvent(event)) this.rememberDeployment(event.Payload.Deployment);
  }

  /** Forgets every version of a purged job, and any failure remembered for it. */
  forget(namespace: string, jobId: string): void {
    const prefix = key(namespace, jobId, '');
    for (const entryKey of [...this.entries.keys()]) {
      if (entryKey.startsWith(prefix)) this.entries.delete(entryKey);
    }
    this.registrations.delete(key(namespace, jobId, 'versions'));
  }

  remember(job: Job, namespace = namespaceOf(job)): void {
    if (typeof job.Version !== 'number') return;
    const entryKey = key(namespace, job.ID, job.Version);
    const existing = this.entries.get(entryKey);
    // A later copy of the same version (status, stability) replaces an older one, never the reverse.
    if (existing !== undefined && 'job' in existing && (existing.job.ModifyIndex ?? 0) > (job.ModifyIndex ?? 0)) return;
    this.store(entryKey, { job });
    const jobKey = key(namespace, job.ID, 'versions');
    const versions = this.registrations.get(jobKey) ?? new Map<number, number>();
    this.registrations.set(jobKey, versions.set(job.Version, job.JobModifyIndex ?? 0));
  }

  rememberDeployment(deployment: Deployment): void {
    this.deployments.set(deployment.ID, { version: deployment.JobVersion });
    if (this.deployments.size > this.maxEntries) this.deployments.delete(this.deployments.keys().next().value!);
  }

  /** One version of a job: from the cache, or from one shared request for the job's versions. */
  async get(namespace: string, jobId: string, version: number): Promise<Job> {
    const wanted = key(namespace, jobId, version);
    const cached = this.cached(wanted);
    if (cached !== undefined) return cached;
    try {
      await this.once(key(namespace, jobId, 'versions'), async () => {
        const { body } = await this.source.getJobVersions(jobId, { namespace });
        for (const job of body.Versions ?? []) this.remember(job, namespace);
      });
    } catch (error) {
      throw this.fail(wanted, new JobUnavailableError(namespace, jobId, version, errorMessage(error), { cause: error }));
    }
    return this.cached(wanted) ?? this.fail(wanted, new JobUnavailableError(namespace, jobId, version, 'Nomad no longer keeps this version'));
  }

  /** The job version `allocation` runs (see the module comment for how the version is found). */
  async jobFor(allocation: Allocation): Promise<Job> {
    const cached = this.cachedJobFor(allocation);
    if (cached !== undefined) return cached;
    const namespace = namespaceOf(allocation);
    const version = await this.versionOf(allocation, namespace);
    return version === undefined ? this.latest(namespace, allocation.JobID) : this.get(namespace, allocation.JobID, version);
  }

  /**
   * The job version `allocation` runs when the cache can tell without asking Nomad (the job embedded,
   * or the version known from the allocation or its deployment, and that version cached), else
   * undefined: then jobFor asks (or gives the failure it remembers).
   */
  cachedJobFor(allocation: Allocation): Job | undefined {
    const namespace = namespaceOf(allocation);
    if (allocation.Job) {
      this.remember(allocation.Job, namespace);
      return allocation.Job;
    }
    const version = this.knownVersionOf(allocation);
    if (version === undefined) return undefined;
    const versionKey = key(namespace, allocation.JobID, version);
    const entry = this.entries.get(versionKey);
    return entry !== undefined && 'job' in entry ? this.cached(versionKey) : undefined;
  }

  /** The version the allocation names, or its deployment's when the cache knows that deployment. */
  private knownVersionOf(allocation: Allocation): number | undefined {
    const own = (allocation as { JobVersion?: unknown }).JobVersion;
    if (typeof own === 'number') return own;
    const deployment = allocation.DeploymentID ? this.deployments.get(allocation.DeploymentID) : undefined;
    return deployment !== undefined && 'version' in deployment ? deployment.version : undefined;
  }

  private async versionOf(allocation: Allocation, namespace: string): Promise<number | undefined> {
    const version = this.knownVersionOf(allocation);
    if (version !== undefined) return version;
    const deploymentId = allocation.DeploymentID;
    if (deploymentId !== undefined && deploymentId !== '') {
      const known = this.deployments.get(deploymentId);
      // Not known, or a failure to read it no longer remembered (a known version was taken above).
      if (known === undefined || ('until' in known && known.until <= this.clock.now())) {
        try {
          const deployment = await this.once(`deployment\u0000${deploymentId}`, async () => {
            return (await this.source.getDeployment(deploymentId, { namespace })).body;
          });
          this.rememberDeployment(deployment);
          return deployment.JobVersion;
        } catch {
          // Deployment garbage-collected: use registration order below, and do not ask again soon.
          this.deployments.set(deploymentId, { until: this.clock.now() + this.failureTtlMs });
        }
      }
    }
    return this.versionAt(namespace, allocation.JobID, allocation.CreateIndex);
  }

  /** The newest known version registered at or before `index`. */
  private versionAt(namespace: string, jobId: string, index: number | undefined): number | undefined {
    const versions = this.registrations.get(key(namespace, jobId, 'versions'));
    if (versions === undefined || index === undefined) return undefined;
    let best: number | undefined;
    for (const [version, registeredAt] of versions) {
      if (registeredAt <= index && (best === undefined || version > best)) best = version;
    }
    return best;
  }

  /** The current job (kept as such), for an allocation whose version nothing tells. */
  private async latest(namespace: string, jobId: string): Promise<Job> {
    const latestKey = key(namespace, jobId, 'latest');
    const cached = this.cached(latestKey);
    if (cached !== undefined) return cached;
    try {
      const job = await this.once(latestKey, async () => (await this.source.getJob(jobId, { namespace })).body);
      this.remember(job, namespace);
      this.store(latestKey, { job });
      return job;
    } catch (error) {
      throw this.fail(latestKey, new JobUnavailableError(namespace, jobId, undefined, errorMessage(error), { cause: error }));
    }
  }

  /** Runs `fetch` unless the same one is in flight, in which case its result is shared. */
  private once<T>(flightKey: string, fetch: () => Promise<T>): Promise<T> {
    const running = this.inFlight.get(flightKey);
    if (running !== undefined) return running as Promise<T>;
    const request = fetch().finally(() => this.inFlight.delete(flightKey));
    this.inFlight.set(flightKey, request);
    return request;
  }

  /** Remembers a failure for failureTtlMs and returns it, to be thrown. */
  private fail(entryKey: string, error: JobUnavailableError): never {
    this.store(entryKey, { error, until: this.clock.now() + this.failureTtlMs });
    throw error;
  }

  /** The cached job, or throws the remembered failure; undefined when unknown or expired. */
  private cached(entryKey: string): Job | undefined {
    const entry = this.entries.get(entryKey);
    if (entry === undefined) return undefined;
    if ('job' in entry) {
      // Refresh recency: Map keeps insertion order, the first key is the least recently used.
      this.entries.delete(entryKey);
      this.entries.set(entryKey, entry);
      return entry.job;
    }
    if (entry.until > this.clock.now()) throw entry.error;
    this.entries.delete(entryKey);
    return undefined;
  }

  private store(entryKey: string, entry: Entry): void {
    this.entries.delete(entryKey);
    this.entries.set(entryKey, entry);
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }
}
