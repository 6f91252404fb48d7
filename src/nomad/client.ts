/**
 * NomadClient: the calls Warden makes to Nomad's HTTP API, typed, over one NomadTransport (one
 * keep-alive pool per cluster). Every query accepts the blocking-query options (index, waitMs) and
 * resolves to `{ body, meta }`, where meta.lastIndex is X-Nomad-Index.
 */
import type { NomadConfig } from './config.js';
import { NomadDecodeError } from './errors.js';
import { stringifyNomadJson } from './json.js';
import {
  NomadTransport,
  type NomadResponse,
  type NomadStreamResponse,
  type NomadTransportOptions,
  type RequestOptions,
} from './transport.js';
import type {
  Allocation,
  AllocationListStub,
  Deployment,
  DeploymentUpdateResponse,
  Evaluation,
  Job,
  JobDeregisterResponse,
  JobListStub,
  JobRegisterResponse,
  JobScaleResponse,
  NodeListStub,
  NomadNode,
} from './types.js';

/** What Warden reads of GET /v1/agent/self (command/agent/agent_endpoint.go agentSelf). */
export interface AgentSelf {
  config?: { Version?: { Version?: string; VersionPrerelease?: string; VersionMetadata?: string } | null } | null;
  member?: { Tags?: Record<string, string> | null } | null;
}

/** What Warden reads of GET /v1/agent/members (structs.ServerMembersResponse). */
export interface AgentMembers {
  Members?: { Name?: string; Status?: string; Tags?: Record<string, string> | null }[] | null;
}

/** Options of a query endpoint: a blocking query when `index` is given. */
export interface QueryOptions extends RequestOptions {
  /** Block until the result's index is greater than this (X-Nomad-Index of the previous answer). */
  index?: number;
  /** How long Nomad may block, in ms (Nomad's default and maximum: 5 min). */
  waitMs?: number;
}

export interface RegisterJobOptions extends RequestOptions {
  /**
   * Register only if the job's current JobModifyIndex equals this (0 = only if the job does not
   * exist). A conflict is a NomadHttpError whose `isEnforceIndexConflict` is true.
   */
  enforceIndex?: number;
  policyOverride?: boolean;
  preserveCounts?: boolean;
}

export interface ScaleJobOptions extends RequestOptions {
  /** Recorded with the scaling event (`nomad job scale` leaves it empty). */
  message?: string;
  meta?: Record<string, unknown>;
  policyOverride?: boolean;
}

export interface ParseJobOptions extends RequestOptions {
  /** Fill in Nomad's defaults (update, migrate, restart policies...). */
  canonicalize?: boolean;
  /** Nomad 1.1.x: parse as HCL1. */
  hclv1?: boolean;
}

export interface JobVersions {
  Versions: Job[];
  Diffs?: unknown[] | null;
}

/** Extra slack on top of `wait` + Nomad's wait/16 jitter before a blocking query counts as lost. */
const BLOCKING_SLACK_MS = 10_000;

function jobPath(jobId: string, suffix = ''): string {
  return `/v1/job/${encodeURIComponent(jobId)}${suffix}`;
}

export class NomadClient {
  readonly transport: NomadTransport;

  constructor(
    readonly config: NomadConfig,
    options: NomadTransportOptions = {},
  ) {
    this.transport = new NomadTransport(config, options);
  }

  /** A GET on a query endpoint, blocking when `options.index` is set (index + wait). */
  query<T>(path: string, options: QueryOptions = {}): Promise<NomadResponse<T>> {
    const { index, waitMs, ...rest } = options;
    if (index === undefined || index <= 0) return this.transport.request<T>('GET', path, rest);
    const query: RequestOptions['query'] = { ...rest.query, index, wait: waitMs === undefined ? undefined : `${Math.ceil(waitMs)}ms` };
    // Nomad holds the answer up to wait + wait/16; the default wait is 5 minutes.
    const waitBound = (waitMs ?? 300_000) * (17 / 16) + BLOCKING_SLACK_MS;
    return this.transport.request<T>('GET', path, { ...rest, query, timeoutMs: rest.timeoutMs ?? waitBound });
  }

  listJobs(prefix?: string, options: QueryOptions = {}): Promise<NomadResponse<JobListStub[]>> {
    return this.query('/v1/jobs', { ...options, query: { ...options.query, prefix } });
  }

  /** The cluster's client nodes, with their drivers' health. */
  listNodes(options: QueryOptions = {}): Promise<NomadResponse<NodeListStub[]>> {
    return this.query('/v1/nodes', options);
  }

  getJob(jobId: string, options: QueryOptions = {}): Promise<NomadResponse<Job>> {
    return this.query(jobPath(jobId), options);
  }

  /** Every version Nomad still keeps of a job, newest first. */
  getJobVersions(jobId: string, options: QueryOptions = {}): Promise<NomadResponse<JobVersions>> {
    return this.query(jobPath(jobId, '/versions'), options);
  }

  /**
   * One version of a job: the current job when it is that version, else from the version list.
   * Resolves to undefined when Nomad no longer keeps that version.
   */
  async getJobVersion(jobId: string, version: number, options: RequestOptions = {}): Promise<Job | undefined> {
    const current = (await this.getJob(jobId, options)).body;
    if (current.Version === version) return current;
    const { Versions } = (await this.getJobVersions(jobId, options)).body;
    return Versions.find((job) => job.Version === version);
  }

  /**
   * PUT /v1/jobs: the evaluation id ("" for periodic/parameterized jobs) and warnings. Nomad
   * registers a job in its own Namespace ("default" when it has none) whatever the request's
   * namespace says, so a job without one gets the call's (or the configured) namespace, as the
   * Nomad CLI's -namespace does.
   */
  async registerJob(job: Job, options: RegisterJobOptions = {}): Promise<JobRegisterResponse> {
    const { enforceIndex, policyOverride, preserveCounts, ...rest } = options;
    const namespace = rest.namespace ?? this.config.namespace;
    const body: Record<string, unknown> = { Job: job.Namespace || namespace === undefined || namespace === '*' ? job : { ...job, Namespace: namespace } };
    if (enforceIndex !== undefined) Object.assign(body, { EnforceIndex: true, JobModifyIndex: enforceIndex });
    if (policyOverride === true) body.PolicyOverride = true;
    if (preserveCounts === true) body.PreserveCounts = true;
    const response = await this.transport.request<JobRegisterResponse>('PUT', '/v1/jobs', { ...rest, body });
    return expectObject(response.body, 'EvalID', 'job register');
  }

  /**
   * POST /v1/job/:id/scale: sets one group's count (a new job version and a `job-scaling`
   * evaluation, as `nomad job scale` does). Nomad refuses it while a deployment of the job is active.
   */
  async scaleJob(jobId: string, group: string, count: number, options: ScaleJobOptions = {}): Promise<JobScaleResponse> {
    const { message, meta, policyOverride, ...rest } = options;
    const body: Record<string, unknown> = { Count: count, Target: { Group: group } };
    if (message !== undefined) body.Message = message;
    if (meta !== undefined) body.Meta = meta;
    if (policyOverride === true) body.PolicyOverride = true;
    const response = await this.transport.request<JobScaleResponse>('PUT', jobPath(jobId, '/scale'), { ...rest, body });
    return expectObject(response.body, 'EvalID', 'job scale');
  }

  /** POST /v1/jobs/parse: HCL to the JSON job Nomad would register. */
  async parseJob(hcl: string, options: ParseJobOptions = {}): Promise<Job> {
    const { canonicalize, hclv1, ...rest } = options;
    const body: Record<string, unknown> = { JobHCL: hcl, Canonicalize: canonicalize ?? false };
    if (hclv1 === true) body.hclv1 = true;
    const response = await this.transport.request<Job>('POST', '/v1/jobs/parse', { ...rest, body });
    return expectObject(response.body, 'ID', 'job parse');
  }

  /** DELETE /v1/job/:id (stop), with `purge` also removing it from Nomad's state. */
  async deregisterJob(jobId: string, options: RequestOptions & { purge?: boolean } = {}): Promise<JobDeregisterResponse> {
    const { purge, ...rest } = options;
    const query = { ...rest.query, purge: purge === true ? true : undefined };
    return (await this.transport.request<JobDeregisterResponse>('DELETE', jobPath(jobId), { ...rest, query })).body;
  }

  /** The job's allocations; `all` includes those of older job versions. */
  jobAllocations(jobId: string, options: QueryOptions & { all?: boolean } = {}): Promise<NomadResponse<AllocationListStub[]>> {
    const { all, ...rest } = options;
    return this.query(jobPath(jobId, '/allocations'), { ...rest, query: { ...rest.query, all: all === true ? true : undefined } });
  }

  /** GET /v1/allocations (the namespace's, or every namespace's with namespace `*`). */
  listAllocations(options: QueryOptions & { prefix?: string } = {}): Promise<NomadResponse<AllocationListStub[]>> {
    const { prefix, ...rest } = options;
    return this.query('/v1/allocations', { ...rest, query: { ...rest.query, prefix } });
  }

  /** The full allocation, with its Job embedded. */
  getAllocation(allocId: string, options: QueryOptions = {}): Promise<NomadResponse<Allocation>> {
    return this.query(`/v1/allocation/${encodeURIComponent(allocId)}`, options);
  }

  getEvaluation(evalId: string, options: QueryOptions = {}): Promise<NomadResponse<Evaluation>> {
    return this.query(`/v1/evaluation/${encodeURIComponent(evalId)}`, options);
  }

  getDeployment(deploymentId: string, options: QueryOptions = {}): Promise<NomadResponse<Deployment>> {
    return this.query(`/v1/deployment/${encodeURIComponent(deploymentId)}`, options);
  }

  /** A client node, with its attributes and meta (needs node:read). */
  getNode(nodeId: string, options: QueryOptions = {}): Promise<NomadResponse<NomadNode>> {
    return this.query(`/v1/node/${encodeURIComponent(nodeId)}`, options);
  }

  /** The agent Warden talks to: its configuration, its version included (needs agent:read). */
  agentSelf(options: RequestOptions = {}): Promise<NomadResponse<AgentSelf>> {
    return this.transport.request('GET', '/v1/agent/self', options);
  }

  /** The servers of the region, each with its version in Tags.build (needs node:read). */
  agentMembers(options: RequestOptions = {}): Promise<NomadResponse<AgentMembers>> {
    return this.transport.request('GET', '/v1/agent/members', options);
  }

  /** Promotes the canaries of every group, or of `groups` only. */
  async promoteDeployment(
    deploymentId: string,
    options: RequestOptions & { groups?: string[] } = {},
  ): Promise<DeploymentUpdateResponse> {
    const { groups, ...rest } = options;
    // Nomad wants the ID repeated in the body (400 "DeploymentID must be specified" otherwise).
    const body = groups === undefined ? { DeploymentID: deploymentId, All: true } : { DeploymentID: deploymentId, Groups: groups };
    const path = `/v1/deployment/promote/${encodeURIComponent(deploymentId)}`;
    return (await this.transport.request<DeploymentUpdateResponse>('PUT', path, { ...rest, body })).body;
  }

  /** Opens GET /v1/event/stream (used by the resumable event stream, src/nomad/eventStream.ts). */
  openEventStream(options: RequestOptions & { topics: readonly string[]; index: number; gzip?: boolean }): Promise<NomadStreamResponse> {
    const { topics, index, ...rest } = options;
    return this.transport.openStream('/v1/event/stream', { ...rest, query: { ...rest.query, index, topic: topics } });
  }

  close(): Promise<void> {
    return this.transport.close();
  }
}

/** A 200 answer that is not the object Nomad documents is a decode error, not a crash later on. */
function expectObject<T>(body: T, key: string, what: string): T {
  if (body === null || typeof body !== 'object' || !(key in body)) {
    throw new NomadDecodeError(`${what}: expected an object with ${key}`, stringifyNomadJson(body) ?? '');
  }
  return body;
}
