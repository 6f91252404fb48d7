import type { Allocation, Deployment, Job } from '../nomad/types.js';
import { BoundedHistory } from './boundedHistory.js';

/**
 * Finds the job version an allocation runs. Allocation events do not carry the Job (nor its
 * version), so the version comes from, in order: the allocation itself (list stubs have
 * JobVersion), the deployment that placed it, or the job's latest version (a job's registration
 * is published before its first placements). Jobs are cached by (namespace, id, version), fed by
 * Job events, with at most one request in flight per key: never one request per allocation.
 */
export interface JobLookups {
  getJob(namespace: string, jobId: string): Promise<Job>;
  /** undefined when Nomad no longer keeps that version. */
  getJobVersion(namespace: string, jobId: string, version: number): Promise<Job | undefined>;
  getDeployment(namespace: string, deploymentId: string): Promise<Deployment>;
}

/** The job (version) of an allocation could not be found. */
export class JobUnavailableError extends Error {
  override name = 'JobUnavailableError';
  readonly code = 'WARDEN_JOB_UNAVAILABLE';

  constructor(
    readonly namespace: string,
    readonly jobId: string,
    readonly version: number | undefined,
    readonly reason: string,
  ) {
    super(`job ${namespace}/${jobId}${version === undefined ? '' : ` version ${version}`} unavailable: ${reason}`);
  }
}

const jobKey = (namespace: string, jobId: string, version: number): string => `${namespace}\u0000${jobId}\u0000${version}`;
const latestKey = (namespace: string, jobId: string): string => `${namespace}\u0000${jobId}`;

export class JobResolver {
  private readonly versions = new BoundedHistory<Job>(2_000);
  private readonly latest = new BoundedHistory<number>(2_000);
  private readonly deploymentVersions = new BoundedHistory<number>(2_000);
  private readonly inFlight = new Map<string, Promise<Job>>();

  constructor(private readonly lookups: JobLookups) {}

  rememberJob(job: Job): void {
    const namespace = job.Namespace || 'default';
    if (typeof job.Version !== 'number') return;
    this.versions.set(jobKey(namespace, job.ID, job.Version), job);
    const known = this.latest.get(latestKey(namespace, job.ID));
    if (known === undefined || job.Version >= known) this.latest.set(latestKey(namespace, job.ID), job.Version);
  }

  rememberDeployment(deployment: Deployment): void {
    this.deploymentVersions.set(deployment.ID, deployment.JobVersion);
  }

  async jobFor(allocation: Allocation): Promise<Job> {
    // GET /v1/allocation/:id (a reconnect's listing) embeds the exact job version.
    if (allocation.Job) {
      this.rememberJob(allocation.Job);
      return allocation.Job;
    }
    const namespace = allocation.Namespace || 'default';
    const version = await this.versionOf(allocation, namespace);
    if (version === undefined) return this.fetchLatest(namespace, allocation.JobID);
    const cached = this.versions.get(jobKey(namespace, allocation.JobID, version));
    if (cached) return cached;
    return this.once(jobKey(namespace, allocation.JobID, version), async () => {
      const job = await this.lookups.getJobVersion(namespace, allocation.JobID, version);
      if (!job) throw new JobUnavailableError(namespace, allocation.JobID, version, 'Nomad no longer keeps this version');
      return job;
    });
  }

  private async versionOf(allocation: Allocation, namespace: string): Promise<number | undefined> {
    const own = (allocation as { JobVersion?: unknown }).JobVersion;
    if (typeof own === 'number') return own;
    const deploymentId = allocation.DeploymentID;
    if (!deploymentId) return this.latest.get(latestKey(namespace, allocation.JobID));
    const known = this.deploymentVersions.get(deploymentId);
    if (known !== undefined) return known;
    const deployment = await this.lookups.getDeployment(namespace, deploymentId);
    this.rememberDeployment(deployment);
    return deployment.JobVersion;
  }

  private fetchLatest(namespace: string, jobId: string): Promise<Job> {
    return this.once(latestKey(namespace, jobId), () => this.lookups.getJob(namespace, jobId));
  }

  private once(key: string, fetch: () => Promise<Job>): Promise<Job> {
    const running = this.inFlight.get(key);
    if (running) return running;
    const request = fetch()
      .then((job) => {
        this.rememberJob(job);
        return job;
      })
      .finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, request);
    return request;
  }
}
