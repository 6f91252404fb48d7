/**
 * The fake cluster's behaviour, as tests script it: what Nomad's job endpoint, scheduler, client
 * and deployment watcher do, each as the raft writes Nomad 1.1.2 makes and the event batches they
 * publish (Type = raft message type, no Job inside Allocation payloads, nothing for a purge). The
 * tables, indexes and reads are ClusterStore's; the HTTP layer reads through it.
 */
import type { Clock } from '../../clock/index.js';
import type { Allocation, Deployment, Evaluation, Job } from '../../nomad/types.js';
import { byCreateIndex, enforceIndex, isClientTerminal, jobStatus, specChanged } from './clusterRules.js';
import { ClusterStore, jobKey } from './clusterStore.js';
import type { EventBroker } from './eventBroker.js';
import { NomadApiError } from './errors.js';
import { nanosFromMillis, rfc3339Nano } from './goText.js';
import type { SeededRandom } from './ids.js';
import { canonicalizeJob, checkJobTypes, validateJob, type JsonObject } from './jobSpec.js';
import {
  DEPLOYMENT_DESCRIPTIONS, MAX_TASK_EVENTS, allocMetric, cloneJson, allocatedResources, clientStatusOf, omitEmpty, resourcesOf, taskEvent, taskState,
  type TaskEventInput,
} from './objects.js';
import { exited, killed, notRestarting, oomKilled, received, restarting, started, type TaskUpdate } from './taskEvents.js';
import { freeNames, type PlanInput, type PlanPlacement } from './plan.js';
import { rescheduleEligible } from './reschedule.js';
import { fakeNomadFeatures, type FakeNomadFeatures } from './versionFeatures.js';

export type { TaskEventInput } from './objects.js';
export type { TaskUpdate } from './taskEvents.js';
export type { Table } from './clusterStore.js';

export interface RegisterOptions {
  namespace?: string;
  /** Register only if the job's JobModifyIndex equals `jobModifyIndex` (0: only if the job does not exist). */
  enforceIndex?: boolean;
  jobModifyIndex?: number;
  /** What the registration's evaluation says triggered it (default job-register; job-scaling for a scale). */
  triggeredBy?: string;
}

/** What a client reports of one allocation in a Node.UpdateAlloc: its task changes and health verdicts, in order. */
export interface ClientReport {
  allocId: string;
  changes: readonly ({ tasks: Record<string, TaskUpdate> } | { healthy: boolean; at: number })[];
}

export interface RegisterResult {
  job: Job;
  evaluation: Evaluation;
  index: number;
}

/** Which group a scheduler pass is for, and the evaluation that does it. */
export interface ScheduleOptions {
  namespace?: string;
  group?: string;
  /** Evaluation that does the pass; default: the job's newest pending evaluation, or a new one. */
  evalId?: string;
}

export interface PlaceOptions extends ScheduleOptions {
  /** How many to place; default: the group's Count minus its live allocations of the current version. */
  count?: number;
  canary?: boolean;
  /** Allocations the same plan stops (a rolling update replaces old versions as it places new ones). */
  stop?: readonly string[];
}

export class ClusterState extends ClusterStore {
  readonly nodeId: string;
  readonly nodeName = 'fake-nomad';
  /** The node's computed class ("v1:" and a 64-bit hash in Nomad). */
  private readonly computedClass: string;
  /** The task drivers the node reports healthy (its commands run as local processes whichever it is). */
  nodeDrivers: readonly string[] = ['exec', 'raw_exec'];
  /** The next dynamic port the scheduler hands out on the fake's node. */
  private nextPort = 20_000;
  /** While a client update is applied: the time its RPC arrived, every allocation's ModifyTime. */
  private clientStamp: bigint | undefined;
  /** What the release FakeNomad plays serves differently (versionFeatures.ts): 1.1.2's by default. */
  features: FakeNomadFeatures = fakeNomadFeatures('1.1.2');
  /** The node's record as GET /v1/node/:id serves it (set attributes and meta to interpolate check names with). */
  readonly node: { Datacenter: string; NodeClass: string; NodePool: string; Attributes: Record<string, string>; Meta: Record<string, string> } = {
    Datacenter: 'dc1', NodeClass: '', NodePool: 'default', Attributes: { 'unique.hostname': 'fake-nomad', 'kernel.name': 'linux' }, Meta: {},
  };

  constructor(
    clock: Clock,
    broker: EventBroker,
    private readonly random: SeededRandom,
    initialIndex = 1,
  ) {
    super(clock, broker, initialIndex);
    this.nodeId = random.uuid();
    this.computedClass = `v1:${BigInt(Math.floor(random.next() * 2 ** 53)) * 2048n}`;
  }

  // ---------------------------------------------------------------------------------------------
  // Jobs

  /** Registers (or updates) a job as PUT /v1/jobs does: new version when the spec changed, plus a job-register evaluation. */
  registerJob(spec: JsonObject | Job, options: RegisterOptions = {}): RegisterResult {
    checkJobTypes(spec);
    if (spec.ID === undefined || spec.ID === null || spec.ID === '') throw new NomadApiError(500, 'Job ID hasn\'t been provided');
    const namespace = options.namespace ?? (typeof spec.Namespace === 'string' && spec.Namespace !== '' ? spec.Namespace : 'default');
    const canonical = canonicalizeJob(spec, namespace, { systemDeployments: this.features.systemJobDeployments });
    validateJob(canonical);
    const key = jobKey(namespace, String(canonical.ID));
    const existing = this.jobs.get(key);
    if (options.enforceIndex) enforceIndex(existing?.current, options.jobModifyIndex ?? 0);
    const unchanged = existing !== undefined && existing.current.Stop !== true && !specChanged(existing.current, canonical);
    if (unchanged) {
      // Job.Register writes nothing for a spec it already has: only the evaluation, in a write of its own.
      const evaluation = this.batch(() => {
        const created = this.newEvaluation(existing.current, options.triggeredBy ?? 'job-register', 'EvaluationUpdated');
        this.refreshJobStatus(existing.current, 'EvaluationUpdated');
        return created;
      });
      return { job: existing.current as Job, evaluation: omitEmpty(evaluation) as Evaluation, index: Number(evaluation.CreateIndex) };
    }
    const { index, evaluation } = this.batch(() => {
      const index = this.touch('jobs', 'job_version', 'job_summary', 'evals');
      const previous = existing?.current;
      const changed = previous === undefined || previous.Stop === true || specChanged(previous, canonical);
      const version = previous === undefined ? 0 : Number(previous.Version) + (changed ? 1 : 0);
      const job: JsonObject = {
        ...canonical, Stop: false, Status: this.registeredStatus(canonical), Stable: false, Version: version, SubmitTime: this.nowNanos(),
        CreateIndex: previous?.CreateIndex ?? index, ModifyIndex: index, JobModifyIndex: index,
      };
      const record = existing ?? { versions: new Map(), current: job, summaryIndex: index };
      record.current = job;
      record.versions.set(version, job);
      this.jobs.set(key, record);
      this.publish('Job', 'JobRegistered', job);
      this.current.batches.push([]);
      return { index, evaluation: this.newEvaluation(job, options.triggeredBy ?? 'job-register', 'JobRegistered') };
    });
    return { job: this.jobs.get(key)!.current as Job, evaluation: omitEmpty(evaluation) as Evaluation, index };
  }

  /** Job.Register's EnforceIndex check alone (nomad/job_endpoint.go: against the state, before the raft apply). */
  checkEnforceIndex(spec: JsonObject | Job, options: RegisterOptions = {}): void {
    const namespace = options.namespace ?? (typeof spec.Namespace === 'string' && spec.Namespace !== '' ? spec.Namespace : 'default');
    enforceIndex(this.jobs.get(jobKey(namespace, String(spec.ID)))?.current, options.jobModifyIndex ?? 0);
  }

  /**
   * POST /v1/job/:id/scale (nomad/job_endpoint.go Scale): the group's count changed in a new job
   * version with a `job-scaling` evaluation; refused while a deployment of the job is active.
   */
  scaleJob(id: string, group: string, count: number, options: { namespace?: string } = {}): RegisterResult {
    const namespace = options.namespace ?? 'default';
    if (group === '') throw new NomadApiError(400, 'missing task group name for scaling action');
    if (!Number.isInteger(count) || count < 0) throw new NomadApiError(400, 'scaling action count can\'t be negative');
    const job = this.jobs.get(jobKey(namespace, id))?.current;
    if (job === undefined) throw new NomadApiError(404, `job ${JSON.stringify(id)} not found`);
    const groups = job.TaskGroups as JsonObject[];
    if (!groups.some((candidate) => candidate.Name === group)) {
      throw new NomadApiError(400, `task group ${JSON.stringify(group)} specified for scaling does not exist in job`);
    }
    const active = this.deployments.ofJob(namespace, id).some((d) => d.Status === 'running' || d.Status === 'paused');
    if (active) throw new NomadApiError(400, 'job scaling blocked due to active deployment');
    const scaled = { ...job, TaskGroups: groups.map((candidate) => (candidate.Name === group ? { ...candidate, Count: count } : candidate)) };
    return this.registerJob(scaled, { namespace, triggeredBy: 'job-scaling' });
  }

  /** A registered job's status: running while it has live allocations, else pending on its new evaluation. */
  private registeredStatus(job: JsonObject): string {
    const allocs = this.allocs.ofJob(String(job.Namespace), String(job.ID));
    return jobStatus({ ...job, Stop: false }, allocs, [{ Status: 'pending' }]);
  }

  /**
   * DELETE /v1/job/:id: stops the job (Job event with Stop=true) or purges it (no Job event, or with
   * features.purgeEvents Nomad 2.x's `Deleted: true` one), and stops its allocations.
   */
  deregisterJob(id: string, options: { namespace?: string; purge?: boolean } = {}): { evaluation: Evaluation; index: number } {
    const namespace = options.namespace ?? 'default';
    const record = this.jobs.get(jobKey(namespace, id));
    if (record === undefined) return this.deregisterAbsentJob(id, namespace);
    const evaluation = this.batch(() => {
      this.touch('jobs', 'job_version', 'evals');
      if (options.purge) {
        this.jobs.delete(jobKey(namespace, id));
        if (this.features.purgeEvents) this.publish('Job', 'JobDeregistered', record.current, { Deleted: true });
      } else {
        const index = this.current.index;
        const job: JsonObject = { ...record.current, Stop: true, ModifyIndex: index, JobModifyIndex: index, Version: Number(record.current.Version) + 1, SubmitTime: this.nowNanos() };
        record.current = job;
        record.versions.set(Number(job.Version), job);
        this.publish('Job', 'JobDeregistered', job);
        this.current.batches.push([]);
      }
      return this.newEvaluation(record.current, 'job-deregister', 'JobDeregistered', { JobModifyIndex: this.current.index });
    });
    const running = this.deployments.ofJob(namespace, id).filter((d) => d.Status === 'running');
    const live = this.liveAllocations(id, namespace);
    // A plan that changes nothing is not applied, so it publishes nothing.
    if (running.length > 0 || live.length > 0) {
      this.batch(() => {
        for (const deployment of running) {
          this.updateDeployment(String(deployment.ID), 'PlanResult', { Status: 'cancelled', StatusDescription: DEPLOYMENT_DESCRIPTIONS.cancelled });
          evaluation.DeploymentID = deployment.ID;
        }
        this.publish('Evaluation', 'PlanResult', evaluation);
        for (const alloc of live) {
          this.updateAlloc(String(alloc.ID), 'PlanResult', { DesiredStatus: 'stop', DesiredDescription: 'alloc not needed due to job update' }, true);
        }
      });
    }
    this.batch(() => {
      // The blocked evaluation waiting for capacity is cancelled, in Nomad's odd words.
      for (const blocked of this.evals.ofJob(namespace, id)) {
        if (blocked.Status === 'blocked') {
          this.patchEvaluation(blocked, { Status: 'canceled', StatusDescription: `evaluation "${String(evaluation.ID)}" successful` });
        }
      }
      this.patchEvaluation(evaluation, { Status: 'complete', SnapshotIndex: evaluation.JobModifyIndex });
    });
    return { evaluation: omitEmpty(evaluation) as Evaluation, index: Number(evaluation.CreateIndex) };
  }

  /**
   * Nomad 1.1.2 applies a deregistration of a job it does not have all the same: a job-deregister
   * evaluation (the defaults of a job: service, priority 50), which the scheduler completes at once.
   */
  private deregisterAbsentJob(id: string, namespace: string): { evaluation: Evaluation; index: number } {
    const evaluation = this.batch(() => {
      const job: JsonObject = { ID: id, Namespace: namespace, Priority: 50, Type: 'service', JobModifyIndex: this.current.index };
      return this.newEvaluation(job, 'job-deregister', 'JobDeregistered');
    });
    this.completeEvaluation(String(evaluation.ID));
    return { evaluation: omitEmpty(evaluation) as Evaluation, index: Number(evaluation.CreateIndex) };
  }

  private liveAllocations(jobId: string, namespace: string): JsonObject[] {
    return this.allocs.ofJob(namespace, jobId).filter((a) => a.DesiredStatus === 'run' && !isClientTerminal(a));
  }

  // ---------------------------------------------------------------------------------------------
  // Scheduling

  /**
   * Applies a scheduler's plan as Nomad's plan applier does: one PlanResult write (the evaluation as
   * the scheduler took it, the job version's deployment created and older ones cancelled, new
   * allocations, stops, in-place moves, follow-up evaluations named), then the evaluation completes
   * in a write of its own, naming the deployment. Returns the allocations placed.
   */
  applyPlan(jobId: string, plan: PlanInput, options: { namespace?: string } = {}): Allocation[] {
    const namespace = options.namespace ?? 'default';
    const job = this.requireJob(jobId, namespace);
    const evaluation = this.evals.get(plan.evalId);
    if (evaluation === undefined) throw new NomadApiError(404, 'eval not found');
    const snapshot = this.index;
    const placed = this.batch(() => {
      this.touch('evals');
      evaluation.ModifyIndex = this.current.index;
      this.publish('Evaluation', 'PlanResult', evaluation);
      const versioned = [...(plan.place ?? []).map((p) => p.group), ...(plan.inPlace ?? []).map((id) => String(this.requireAlloc(id).TaskGroup))];
      const deployment = versioned.length > 0 ? this.deploymentFor(job, versioned) : undefined;
      const allocs: JsonObject[] = [];
      for (const placement of plan.place ?? []) {
        const group = this.requireGroup(job, placement.group);
        const inDeployment = deployment !== undefined && group.Update !== null ? deployment : undefined;
        const alloc = this.newAllocation(job, group, placement.name, evaluation, inDeployment, placement.canary === true, placement);
        allocs.push(alloc);
        if (inDeployment) this.countPlaced(inDeployment, String(group.Name), [String(alloc.ID)], placement.canary === true);
        if (placement.previousAllocation !== undefined) this.updateAlloc(placement.previousAllocation, 'PlanResult', { NextAllocation: alloc.ID }, true);
      }
      for (const stop of plan.stop ?? []) {
        this.updateAlloc(stop.allocId, 'PlanResult', { DesiredStatus: 'stop', DesiredDescription: stop.description }, true);
      }
      for (const id of plan.inPlace ?? []) this.moveInPlace(job, id, evaluation, deployment);
      for (const [allocId, followup] of Object.entries(plan.followups ?? {})) this.updateAlloc(allocId, 'PlanResult', { FollowupEvalID: followup }, true);
      this.refreshJobStatus(job, 'PlanResult');
      return allocs;
    });
    this.finishEvaluation(plan.evalId, job, snapshot);
    return placed.map((a) => this.allocation(String(a.ID))!);
  }

  /**
   * The evaluation done (its own write): complete, queued allocations per group, the snapshot it
   * planned from, and the job version's deployment, as Nomad's worker writes it.
   */
  finishEvaluation(evalId: string, job: JsonObject, snapshot = this.index, fields: JsonObject = {}): void {
    const evaluation = this.evals.get(evalId);
    if (evaluation === undefined) throw new NomadApiError(404, 'eval not found');
    const deployment = this.deployments.ofJob(String(job.Namespace), String(job.ID)).find((d) => d.JobVersion === job.Version && d.JobCreateIndex === job.CreateIndex);
    const queued = Object.fromEntries((job.TaskGroups as JsonObject[]).map((g) => [g.Name, 0]));
    this.batch(() => this.patchEvaluation(evaluation, {
      Status: 'complete', SnapshotIndex: snapshot, QueuedAllocations: queued, ...(deployment ? { DeploymentID: deployment.ID } : {}), ...fields,
    }));
  }

  /** The evaluation a scripted pass uses: the one named, the job's newest pending one, or a new one. */
  private scriptedEvaluation(job: JsonObject, evalId: string | undefined): string {
    if (evalId !== undefined) {
      if (this.evals.get(evalId) === undefined) throw new NomadApiError(404, 'eval not found');
      return evalId;
    }
    const pending = this.evals.ofJob(String(job.Namespace), String(job.ID)).filter((e) => e.Status === 'pending').sort(byCreateIndex);
    return String((pending[pending.length - 1] ?? this.batch(() => this.newEvaluation(job, 'job-register', 'EvaluationUpdated'))).ID);
  }

  /** A scheduler placement (PlanResult): new allocations for a group, the deployment, then the evaluation completes. */
  placeAllocations(jobId: string, options: PlaceOptions = {}): Allocation[] {
    const namespace = options.namespace ?? 'default';
    const job = this.requireJob(jobId, namespace);
    const group = this.requireGroup(job, options.group);
    const live = this.liveAllocations(jobId, namespace).filter((a) => a.TaskGroup === group.Name && this.allocJobs.get(String(a.ID))?.Version === job.Version);
    const count = options.count ?? Math.max(0, Number(group.Count) - live.length);
    const names = freeNames(jobId, String(group.Name), this.allocs.ofJob(namespace, jobId), count);
    return this.applyPlan(jobId, {
      evalId: this.scriptedEvaluation(job, options.evalId),
      place: names.map((name) => ({ group: String(group.Name), name, canary: options.canary === true })),
      stop: (options.stop ?? []).map((allocId) => {
        this.requireAlloc(allocId);
        return { allocId, description: 'alloc not needed due to job update' };
      }),
    }, { namespace });
  }

  /**
   * A non-destructive job change applied in place (PlanResult): the group's live allocations keep
   * their IDs and now run the job's current version, moved into its deployment with their health
   * cleared (generic_sched.go: new DeploymentID, DeploymentStatus nil; the state store counts each
   * as placed in the deployment), then the evaluation completes. Nothing is published for the
   * tasks: the client keeps them running.
   */
  updateInPlace(jobId: string, options: ScheduleOptions = {}): Allocation[] {
    const namespace = options.namespace ?? 'default';
    const job = this.requireJob(jobId, namespace);
    const group = this.requireGroup(job, options.group);
    const stale = this.liveAllocations(jobId, namespace).filter((a) => a.TaskGroup === group.Name && this.allocJobs.get(String(a.ID))?.Version !== job.Version);
    this.applyPlan(jobId, { evalId: this.scriptedEvaluation(job, options.evalId), inPlace: stale.map((a) => String(a.ID)) }, { namespace });
    return stale.map((a) => this.allocation(String(a.ID))!);
  }

  private moveInPlace(job: JsonObject, allocId: string, evaluation: JsonObject, deployment: JsonObject | undefined): void {
    const alloc = this.requireAlloc(allocId);
    this.allocJobs.set(allocId, job);
    const moved = deployment !== undefined && alloc.DeploymentID !== deployment.ID;
    if (moved) this.countPlaced(deployment, String(alloc.TaskGroup), [], false, 1);
    this.updateAlloc(allocId, 'PlanResult', { EvalID: evaluation.ID, ...(moved ? { DeploymentID: deployment.ID, DeploymentStatus: null } : {}) }, true);
  }

  private countPlaced(deployment: JsonObject, group: string, ids: readonly string[], canary: boolean, extra = 0): void {
    this.adjustDeploymentGroup(deployment, group, (state) => {
      state.PlacedAllocs = Number(state.PlacedAllocs) + ids.length + extra;
      if (canary) state.PlacedCanaries = [...((state.PlacedCanaries as string[] | null) ?? []), ...ids];
    }, 'PlanResult');
  }

  /**
   * A placement that finds no room: the evaluation completes with FailedTGAllocs and a blocked
   * evaluation waiting for capacity (and, for a service job, a deployment is created anyway).
   */
  failPlacement(jobId: string, options: { namespace?: string; group?: string; dimension?: string; evalId?: string } = {}): { evaluation: Evaluation; blocked: Evaluation } {
    const namespace = options.namespace ?? 'default';
    const job = this.requireJob(jobId, namespace);
    const group = this.requireGroup(job, options.group);
    const task = (group.Tasks as JsonObject[])[0]!;
    const failed = { [String(group.Name)]: allocMetric(this.nodeId, { dimension: options.dimension ?? 'memory', task: String(task.Name), resources: resourcesOf(task) }) };
    // Nomad creates the blocked evaluation first, then applies the (empty) plan, then completes.
    const evaluation = this.evals.get(this.scriptedEvaluation(job, options.evalId))!;
    const snapshot = this.index;
    const blocked = this.batch(() =>
      this.newEvaluation(job, 'queued-allocs', 'EvaluationUpdated', {
        Status: 'blocked', StatusDescription: 'created to place remaining allocations', PreviousEval: evaluation.ID,
        FailedTGAllocs: failed, ClassEligibility: { [this.computedClass]: true }, SnapshotIndex: job.JobModifyIndex,
      }),
    );
    this.batch(() => {
      this.deploymentFor(job, [String(group.Name)]);
      this.touch('evals');
      evaluation.ModifyIndex = this.current.index;
      this.publish('Evaluation', 'PlanResult', evaluation);
    });
    this.finishEvaluation(String(evaluation.ID), job, snapshot, {
      BlockedEval: blocked.ID, FailedTGAllocs: failed, QueuedAllocations: { [String(group.Name)]: Number(group.Count) },
    });
    return { evaluation: this.evaluation(String(evaluation.ID))!, blocked: omitEmpty(blocked) as Evaluation };
  }

  /**
   * The running deployment of this job version, created on first use (service jobs, system ones
   * from 1.11, whose groups have an update block); older versions' running deployments are
   * cancelled in the same plan.
   */
  private deploymentFor(job: JsonObject, groupNames: readonly string[]): JsonObject | undefined {
    const groups = (job.TaskGroups as JsonObject[]).filter((g) => g.Update !== null);
    const deployed = job.Type === 'service' || (job.Type === 'system' && this.features.systemJobDeployments);
    if (!deployed || !groups.some((g) => groupNames.includes(String(g.Name)))) return undefined;
    const ofJob = this.deployments.ofJob(String(job.Namespace), String(job.ID));
    const found = ofJob.find((d) => d.JobVersion === job.Version && d.JobCreateIndex === job.CreateIndex && d.Status === 'running');
    if (found) return found;
    for (const older of ofJob) {
      if (older.Status === 'running' || older.Status === 'paused') {
        this.updateDeployment(String(older.ID), 'PlanResult', { Status: 'cancelled', StatusDescription: DEPLOYMENT_DESCRIPTIONS.superseded });
      }
    }
    const index = this.touch('deployment');
    const states = Object.fromEntries(
      groups.map((g) => {
        const update = g.Update as JsonObject;
        return [g.Name, {
          AutoPromote: update.AutoPromote, AutoRevert: update.AutoRevert, DesiredCanaries: update.Canary, DesiredTotal: g.Count,
          HealthyAllocs: 0, PlacedAllocs: 0, PlacedCanaries: null, ProgressDeadline: update.ProgressDeadline, Promoted: false,
          RequireProgressBy: rfc3339Nano(this.clock.now() + Number(update.ProgressDeadline) / 1e6), UnhealthyAllocs: 0,
        }];
      }),
    );
    const canaries = Object.values(states).some((g) => Number((g as JsonObject).DesiredCanaries) > 0);
    const deployment: JsonObject = {
      CreateIndex: index, ID: this.random.uuid(), IsMultiregion: false, JobCreateIndex: job.CreateIndex, JobID: job.ID,
      JobModifyIndex: job.JobModifyIndex, JobSpecModifyIndex: job.JobModifyIndex, JobVersion: job.Version, ModifyIndex: index,
      Namespace: job.Namespace, Status: 'running',
      StatusDescription: canaries ? 'Deployment is running but requires manual promotion' : DEPLOYMENT_DESCRIPTIONS.running, TaskGroups: states,
    };
    this.deployments.set(String(deployment.ID), deployment);
    this.publish('Deployment', 'PlanResult', deployment);
    return deployment;
  }

  private newAllocation(
    job: JsonObject, group: JsonObject, name: string, evaluation: JsonObject, deployment: JsonObject | undefined, canary: boolean,
    placement: Partial<PlanPlacement> = {},
  ): JsonObject {
    const index = this.touch('allocs', 'job_summary');
    const now = this.nowNanos();
    const tasks = group.Tasks as JsonObject[];
    const resources = tasks.map(resourcesOf);
    const sum = (field: string): number => resources.reduce((total, r) => total + Number(r[field] ?? 0), 0);
    const disk = Number((group.EphemeralDisk as JsonObject | null)?.SizeMB ?? 300);
    const allocated = allocatedResources(group);
    const ports = this.hostPorts(group);
    if (ports.length > 0) allocated.Shared = { ...(allocated.Shared as JsonObject), Ports: ports };
    const alloc: JsonObject = {
      AllocModifyIndex: index, AllocatedResources: allocated, ClientDescription: '', ClientStatus: 'pending',
      CreateIndex: index, CreateTime: now, DeploymentID: deployment?.ID ?? '',
      DeploymentStatus: canary ? { Canary: true, Healthy: null, ModifyIndex: index, Timestamp: null } : null,
      DesiredDescription: '', DesiredStatus: 'run', DesiredTransition: { ForceReschedule: null, Migrate: null, Reschedule: null },
      EvalID: evaluation.ID, FollowupEvalID: '', ID: this.random.uuid(), JobID: job.ID, Metrics: allocMetric(this.nodeId),
      ModifyIndex: index, ModifyTime: now, Name: name, Namespace: job.Namespace, NetworkStatus: null, NextAllocation: '',
      NodeID: this.nodeId, NodeName: this.nodeName, PreviousAllocation: placement.previousAllocation ?? '', RescheduleTracker: placement.rescheduleTracker ?? null,
      Resources: { CPU: sum('CPU'), Cores: 0, Devices: null, DiskMB: disk, IOPS: 0, MemoryMB: sum('MemoryMB'), MemoryMaxMB: sum('MemoryMB'), Networks: null },
      SharedResources: { CPU: 0, Cores: 0, Devices: null, DiskMB: disk, IOPS: 0, MemoryMB: 0, MemoryMaxMB: 0, Networks: null },
      TaskGroup: group.Name, TaskResources: Object.fromEntries(tasks.map((t, i) => [t.Name, resources[i]])), TaskStates: null,
    };
    this.allocs.set(String(alloc.ID), alloc);
    this.allocJobs.set(String(alloc.ID), job);
    this.publish('Allocation', 'PlanResult', alloc);
    return alloc;
  }

  /** The scheduler's choice of host ports for the group's ports (dynamic ones from 20000 up on the fake's one node, IP 127.0.0.1). */
  private hostPorts(group: JsonObject): JsonObject[] {
    const networks = (group.Networks as JsonObject[] | null) ?? [];
    return networks.flatMap((network) =>
      [...((network.ReservedPorts as JsonObject[] | null) ?? []), ...((network.DynamicPorts as JsonObject[] | null) ?? [])].map((port) => ({
        Label: port.Label, Value: Number(port.Value ?? 0) || this.nextPort++, To: Number(port.To ?? 0), HostIP: '127.0.0.1',
      })),
    );
  }
  // ---------------------------------------------------------------------------------------------
  // Evaluations

  private newEvaluation(job: JsonObject, triggeredBy: string, type: string, fields: JsonObject = {}): JsonObject {
    const index = this.touch('evals');
    const now = this.nowNanos();
    const evaluation: JsonObject = {
      CreateIndex: index, CreateTime: now, ID: this.random.uuid(), JobID: job.ID, JobModifyIndex: job.JobModifyIndex,
      ModifyIndex: index, ModifyTime: now, Namespace: job.Namespace, Priority: job.Priority, Status: 'pending',
      TriggeredBy: triggeredBy, Type: job.Type, ...fields,
    };
    this.evals.set(String(evaluation.ID), evaluation);
    this.publish('Evaluation', type, evaluation);
    return evaluation;
  }

  /** Creates an evaluation for a job (any TriggeredBy, Status, FailedTGAllocs, WaitUntil ...). */
  createEvaluation(jobId: string, fields: JsonObject & { TriggeredBy?: string } = {}, options: { namespace?: string; type?: string } = {}): Evaluation {
    const job = this.requireJob(jobId, options.namespace ?? 'default');
    // The raft message that creates it names the event: EvaluationUpdated, or e.g. AllocationUpdateDesiredStatus for the deployment watcher's.
    const evaluation = this.batch(() => {
      const created = this.newEvaluation(job, fields.TriggeredBy ?? 'job-register', options.type ?? 'EvaluationUpdated', fields);
      this.refreshJobStatus(job, options.type ?? 'EvaluationUpdated');
      return created;
    });
    return omitEmpty(evaluation) as Evaluation;
  }

  /** Changes an evaluation's fields (Status complete/failed/canceled, StatusDescription, NextEval ...). */
  updateEvaluation(id: string, fields: JsonObject): Evaluation {
    const evaluation = this.evals.get(id);
    if (evaluation === undefined) throw new NomadApiError(404, 'eval not found');
    this.batch(() => this.patchEvaluation(evaluation, fields));
    return this.evaluation(id)!;
  }

  private patchEvaluation(evaluation: JsonObject, fields: JsonObject, type = 'EvaluationUpdated'): void {
    this.touch('evals');
    Object.assign(evaluation, fields, { ModifyIndex: this.current.index, ModifyTime: this.nowNanos() });
    this.publish('Evaluation', type, evaluation);
    const job = this.jobs.get(jobKey(String(evaluation.Namespace), String(evaluation.JobID)))?.current;
    if (job) this.refreshJobStatus(job, type);
  }

  private completeEvaluation(id: string, fields: JsonObject = {}): void {
    const evaluation = this.evals.get(id)!;
    this.batch(() => this.patchEvaluation(evaluation, { Status: 'complete', SnapshotIndex: evaluation.JobModifyIndex, ...fields }));
  }

  // ---------------------------------------------------------------------------------------------
  // Allocations: what a Nomad client reports

  /**
   * Applies a client update to task states (one AllocationUpdated write); ClientStatus follows the
   * tasks. `at`: when the client saw it happen (default now), for a client that reports late.
   */
  updateTasks(allocId: string, updates: Record<string, TaskUpdate>, options: { at?: number } = {}): Allocation {
    const alloc = this.requireAlloc(allocId);
    this.batch(() => {
      const states: Record<string, JsonObject> = cloneJson((alloc.TaskStates as Record<string, JsonObject> | null) ?? {});
      for (const task of this.tasksOf(alloc)) states[String(task.Name)] ??= taskState();
      for (const [name, update] of Object.entries(updates)) {
        const state = states[name];
        if (state === undefined) throw new NomadApiError(400, `unknown task name "${name}"`);
        const now = update.at ?? options.at ?? this.clock.now();
        const events = [...(state.Events as JsonObject[]), ...(update.events ?? []).map((e) => taskEvent(e, nanosFromMillis(now)))];
        state.Events = events.slice(-MAX_TASK_EVENTS);
        for (const e of update.events ?? []) if (e.Type === 'Restarting') Object.assign(state, { Restarts: Number(state.Restarts) + 1, LastRestart: rfc3339Nano(now) });
        if (update.State === 'running' && state.State !== 'running') state.StartedAt = rfc3339Nano(now);
        if (update.State === 'dead' && state.State !== 'dead') state.FinishedAt = rfc3339Nano(now);
        if (update.State !== undefined) state.State = update.State;
        if (update.Failed !== undefined) state.Failed = update.Failed;
      }
      // Every client update carries the network status (empty without a network block).
      const network = alloc.NetworkStatus ?? { Address: '', DNS: null, InterfaceName: '' };
      this.updateAlloc(allocId, 'AllocationUpdated', { TaskStates: states, NetworkStatus: network, ...clientStatusOf(states) }, false);
    });
    return this.allocation(allocId)!;
  }

  private taskNames(allocId: string, task: string | undefined): string[] {
    return task === undefined ? this.tasksOf(this.requireAlloc(allocId)).map((t) => String(t.Name)) : [task];
  }

  private eachTask(allocId: string, task: string | undefined, update: () => TaskUpdate): Allocation {
    return this.updateTasks(allocId, Object.fromEntries(this.taskNames(allocId, task).map((name) => [name, update()])));
  }

  /** The client received the allocation: tasks pending, "Received" and "Task Setup" events. */
  receiveAllocation(allocId: string): Allocation {
    return this.eachTask(allocId, undefined, received);
  }

  /** A task (every task when omitted) started: running, StartedAt now, "Started" event. */
  startTask(allocId: string, task?: string): Allocation {
    return this.eachTask(allocId, task, started);
  }

  /** A task exited non-zero. With `restartDelayMs` it restarts (pending until startTask); otherwise it fails for good. */
  failTask(allocId: string, task: string, options: { exitCode?: number; restartDelayMs?: number } = {}): Allocation {
    const exit = exited(options.exitCode ?? 1);
    const update = options.restartDelayMs === undefined ? notRestarting(exit) : restarting(exit, options.restartDelayMs);
    return this.updateTasks(allocId, { [task]: update });
  }

  /**
   * The kernel killed a task for its memory: Terminated with `oom_killed`, then Restarting (pending
   * until startTask) when its job's restart policy has an attempt left, else Not Restarting (failed).
   * Returns the delay of the restart, or undefined when there is none.
   */
  oomKillTask(allocId: string, task: string): { allocation: Allocation; restartDelayMs: number | undefined } {
    this.requireAlloc(allocId);
    const alloc = this.allocation(allocId)!;
    const policy = alloc.Job?.TaskGroups?.find((g) => g.Name === alloc.TaskGroup)?.RestartPolicy;
    const restarts = alloc.TaskStates?.[task]?.Restarts ?? 0;
    const restartDelayMs = restarts < (policy?.Attempts ?? 0) ? (policy?.Delay ?? 0) / 1e6 : undefined;
    const update = restartDelayMs === undefined ? notRestarting(oomKilled()) : restarting(oomKilled(), restartDelayMs);
    return { allocation: this.updateTasks(allocId, { [task]: update }), restartDelayMs };
  }

  /** A task exited (exit code 0 by default) and is done: dead, failed only for a non-zero code. */
  completeTask(allocId: string, task?: string, exitCode = 0): Allocation {
    return this.eachTask(allocId, task, () => ({ State: 'dead', Failed: exitCode !== 0, events: [exited(exitCode)] }));
  }

  /** The client killed the tasks (after a stop): Killing, Terminated (signal 2), Killed; tasks dead. */
  killTasks(allocId: string, task?: string): Allocation {
    return this.eachTask(allocId, task, killed);
  }

  /** Appends task events as they are (e.g. "Alloc Unhealthy", "Driver", "Restart Signaled"). */
  addTaskEvents(allocId: string, task: string, events: TaskEventInput[]): Allocation {
    return this.updateTasks(allocId, { [task]: { events } });
  }

  /** The client's health verdict: DeploymentStatus and the deployment's counters, in one write. */
  setAllocHealth(allocId: string, healthy: boolean, options: { at?: number } = {}): Allocation {
    const alloc = this.requireAlloc(allocId);
    this.batch(() => {
      const previous = alloc.DeploymentStatus as JsonObject | null;
      const status = { Canary: previous?.Canary ?? false, Healthy: healthy, ModifyIndex: this.current.index, Timestamp: rfc3339Nano(options.at ?? this.clock.now()) };
      this.updateAlloc(allocId, 'AllocationUpdated', { DeploymentStatus: status }, false);
      const deployment = this.deployments.get(String(alloc.DeploymentID));
      if (deployment && previous?.Healthy !== healthy) {
        this.adjustDeploymentGroup(deployment, String(alloc.TaskGroup), (state) => {
          const [gain, lose] = healthy ? ['HealthyAllocs', 'UnhealthyAllocs'] : ['UnhealthyAllocs', 'HealthyAllocs'];
          state[gain] = Number(state[gain]) + 1;
          if (typeof previous?.Healthy === 'boolean') state[lose] = Number(state[lose]) - 1;
        }, 'AllocationUpdated');
      }
    });
    return this.allocation(allocId)!;
  }

  /** Server-side desired status (stop/evict), as `nomad alloc stop` or a job update does. */
  setDesiredStatus(allocId: string, status: 'run' | 'stop' | 'evict', description = ''): Allocation {
    this.requireAlloc(allocId);
    this.batch(() => this.updateAlloc(allocId, 'AllocationUpdateDesiredStatus', { DesiredStatus: status, DesiredDescription: description }, true));
    return this.allocation(allocId)!;
  }

  /** PUT /v1/allocation/:id/stop: an alloc-stop evaluation whose plan stops the allocation. */
  stopAllocation(allocId: string): { evaluation: Evaluation; index: number } {
    const alloc = this.requireAlloc(allocId);
    const job = this.requireJob(String(alloc.JobID), String(alloc.Namespace));
    const evaluation = this.batch(() => {
      this.updateAlloc(allocId, 'AllocationUpdateDesiredStatus', { DesiredTransition: { ForceReschedule: null, Migrate: true, Reschedule: null } }, false);
      return this.newEvaluation(job, 'alloc-stop', 'AllocationUpdateDesiredStatus');
    });
    this.batch(() => {
      this.publish('Evaluation', 'PlanResult', evaluation);
      this.updateAlloc(allocId, 'PlanResult', { DesiredStatus: 'stop', DesiredDescription: 'alloc is being migrated' }, true);
    });
    this.completeEvaluation(String(evaluation.ID));
    return { evaluation: omitEmpty(evaluation) as Evaluation, index: Number(evaluation.CreateIndex) };
  }

  /** Sets any allocation fields as a client update (DesiredTransition, FollowupEvalID, NextAllocation ...). */
  patchAllocation(allocId: string, fields: JsonObject, type = 'AllocationUpdated'): Allocation {
    this.requireAlloc(allocId);
    this.batch(() => this.updateAlloc(allocId, type, fields, type !== 'AllocationUpdated'));
    return this.allocation(allocId)!;
  }

  /**
   * One Node.UpdateAlloc as Nomad's server applies it (nomad/node_endpoint.go UpdateAlloc, batched
   * for 50 ms): every allocation's reported changes in one raft write, each allocation stamped with
   * the time the update arrived (`receivedAt`); then, as a second item at the same index, an
   * alloc-failure evaluation for each allocation that failed and may be rescheduled.
   */
  applyClientUpdates(reports: readonly ClientReport[], receivedAt: number): Evaluation[] {
    return this.batch(() => {
      this.clientStamp = nanosFromMillis(receivedAt);
      try {
        for (const report of reports) {
          if (this.allocs.get(report.allocId) === undefined) continue;
          for (const change of report.changes) {
            if ('tasks' in change) this.updateTasks(report.allocId, change.tasks);
            else this.setAllocHealth(report.allocId, change.healthy, { at: change.at });
          }
        }
      } finally {
        this.clientStamp = undefined;
      }
      this.current.batches.push([]);
      const evaluations: Evaluation[] = [];
      for (const report of reports) {
        const alloc = this.allocs.get(report.allocId);
        const job = alloc && this.jobs.get(jobKey(String(alloc.Namespace), String(alloc.JobID)))?.current;
        const group = job && (job.TaskGroups as JsonObject[]).find((g) => g.Name === alloc.TaskGroup);
        if (!alloc || !job || !group || alloc.ClientStatus !== 'failed' || alloc.FollowupEvalID) continue;
        if (!rescheduleEligible(alloc, group.ReschedulePolicy as JsonObject | null, receivedAt * 1e6)) continue;
        evaluations.push(omitEmpty(this.newEvaluation(job, 'alloc-failure', 'AllocationUpdated', { JobModifyIndex: 0 })) as Evaluation);
        this.refreshJobStatus(job, 'AllocationUpdated');
      }
      return evaluations;
    });
  }

  private updateAlloc(allocId: string, type: string, fields: JsonObject, server: boolean): void {
    const alloc = this.requireAlloc(allocId);
    const index = this.touch('allocs', 'job_summary');
    Object.assign(alloc, fields, { ModifyIndex: index, ModifyTime: this.clientStamp ?? this.nowNanos() }, server ? { AllocModifyIndex: index } : {});
    this.publish('Allocation', type, alloc);
    const record = this.jobs.get(jobKey(String(alloc.Namespace), String(alloc.JobID)));
    if (record) {
      record.summaryIndex = index;
      this.refreshJobStatus(record.current, type);
    }
  }

  /** Job status as Nomad derives it from allocations and evaluations (state_store getJobStatus). */
  private refreshJobStatus(job: JsonObject, type: string): void {
    const namespace = String(job.Namespace);
    const id = String(job.ID);
    const allocs = this.allocs.ofJob(namespace, id);
    const status = jobStatus(job, allocs, this.evals.ofJob(namespace, id));
    if (status === job.Status) return;
    const record = this.jobs.get(jobKey(String(job.Namespace), String(job.ID)));
    if (!record) return;
    const index = this.touch('jobs');
    const updated: JsonObject = { ...record.current, Status: status, ModifyIndex: index };
    record.current = updated;
    record.versions.set(Number(updated.Version), updated);
    for (const alloc of allocs) if (this.allocJobs.get(String(alloc.ID))?.Version === updated.Version) this.allocJobs.set(String(alloc.ID), updated);
    this.publish('Job', type, updated);
  }

  // ---------------------------------------------------------------------------------------------
  // Deployments

  private adjustDeploymentGroup(deployment: JsonObject, group: string, change: (state: JsonObject) => void, type: string): void {
    const state = (deployment.TaskGroups as Record<string, JsonObject>)[group];
    if (state === undefined) return;
    change(state);
    this.updateDeployment(String(deployment.ID), type, {});
  }

  private updateDeployment(id: string, type: string, fields: JsonObject): void {
    const deployment = this.deployments.get(id)!;
    Object.assign(deployment, fields, { ModifyIndex: this.touch('deployment') });
    this.publish('Deployment', type, deployment);
  }

  /** Deployment watcher outcome: successful, failed ("Failed due to progress deadline" ...), cancelled, paused. */
  setDeploymentStatus(id: string, status: string, description = DEPLOYMENT_DESCRIPTIONS[status] ?? ''): Deployment {
    const deployment = this.deployments.get(id);
    if (deployment === undefined) throw new NomadApiError(500, 'deployment not found');
    const job = this.requireJob(String(deployment.JobID), String(deployment.Namespace));
    const watcher = (type: string): JsonObject => this.newEvaluation(job, 'deployment-watcher', type, { DeploymentID: id });
    let evaluation: JsonObject;
    if (status === 'successful') {
      // The watcher's evaluation comes first; its plan marks the deployment and the job version stable.
      evaluation = this.batch(() => watcher('AllocationUpdateDesiredStatus'));
      this.batch(() => {
        this.updateDeployment(id, 'PlanResult', { Status: status, StatusDescription: description });
        this.markStable(deployment);
        this.publish('Evaluation', 'PlanResult', evaluation);
      });
    } else {
      evaluation = this.batch(() => {
        this.updateDeployment(id, 'DeploymentStatusUpdate', { Status: status, StatusDescription: description });
        return watcher('DeploymentStatusUpdate');
      });
    }
    this.completeEvaluation(String(evaluation.ID));
    return this.deployment(id)!;
  }

  private markStable(deployment: JsonObject): void {
    const record = this.jobs.get(jobKey(String(deployment.Namespace), String(deployment.JobID)));
    const version = record?.versions.get(Number(deployment.JobVersion));
    if (!record || !version) return;
    const stable: JsonObject = { ...version, Stable: true, ModifyIndex: this.touch('jobs', 'job_version') };
    record.versions.set(Number(stable.Version), stable);
    if (record.current.Version === stable.Version) record.current = stable;
    this.publish('Job', 'PlanResult', stable);
  }

  /** PUT /v1/deployment/allocation-health: the operator's verdicts (health_check = "manual"), one write. */
  setDeploymentAllocHealth(id: string, healthy: readonly string[], unhealthy: readonly string[]): Deployment {
    const deployment = this.deployments.get(id);
    if (deployment === undefined) throw new NomadApiError(500, 'deployment not found');
    // The deployment watcher's checks (nomad/deploymentwatcher SetAllocHealth).
    for (const allocId of [...healthy, ...unhealthy]) {
      const alloc = this.allocs.get(allocId);
      if (alloc === undefined) throw new NomadApiError(500, `Unknown allocation ${JSON.stringify(allocId)}`);
      if (alloc.DeploymentID !== id) throw new NomadApiError(500, `Allocation ${JSON.stringify(allocId)} is not part of deployment`);
    }
    this.batch(() => {
      for (const allocId of healthy) this.setAllocHealth(allocId, true);
      for (const allocId of unhealthy) this.setAllocHealth(allocId, false);
    });
    return this.deployment(id)!;
  }

  /** POST /v1/deployment/promote: canaries lose the Canary flag, groups are marked promoted, an evaluation follows. */
  promoteDeployment(id: string, groups?: readonly string[]): { evaluation: Evaluation; index: number } {
    const deployment = this.deployments.get(id);
    if (deployment === undefined) throw new NomadApiError(500, 'deployment not found');
    const evaluation = this.batch(() => {
      const states = deployment.TaskGroups as Record<string, JsonObject>;
      for (const [name, state] of Object.entries(states)) {
        if (groups !== undefined && !groups.includes(name)) continue;
        state.Promoted = true;
        for (const allocId of (state.PlacedCanaries as string[] | null) ?? []) {
          const status = this.allocs.get(allocId)?.DeploymentStatus as JsonObject | null | undefined;
          if (status) this.updateAlloc(allocId, 'DeploymentPromotion', { DeploymentStatus: { ...status, Canary: false } }, false);
        }
      }
      this.updateDeployment(id, 'DeploymentPromotion', { StatusDescription: DEPLOYMENT_DESCRIPTIONS.running });
      return this.newEvaluation(this.requireJob(String(deployment.JobID), String(deployment.Namespace)), 'deployment-watcher', 'DeploymentPromotion', { DeploymentID: id });
    });
    return { evaluation: omitEmpty(evaluation) as Evaluation, index: Number(evaluation.CreateIndex) };
  }

  // ---------------------------------------------------------------------------------------------

}

