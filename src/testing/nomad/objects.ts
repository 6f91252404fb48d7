/**
 * Builders for the objects Nomad 1.1.2 writes (allocations, task states and events, evaluations,
 * deployments, list stubs), with every key Nomad's encoder writes, so a client sees the same shape
 * from the fake as from a real agent.
 */
import type { JsonObject } from './jobSpec.js';

/** Nomad's codec drops zero top-level fields of Allocation and Evaluation (whole-struct omitempty). */
export function omitEmpty(value: JsonObject): JsonObject {
  const result: JsonObject = {};
  for (const key in value) if (!isZero(value[key])) result[key] = value[key];
  return result;
}

function isZero(value: unknown): boolean {
  if (value === null || value === undefined || value === '' || value === 0 || value === 0n || value === false) return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value !== 'object') return false;
  // A struct whose members are all unset (DesiredTransition) is zero too; maps with keys are not.
  for (const key in value) if ((value as JsonObject)[key] !== null) return false;
  return true;
}

/**
 * A deep copy of JSON-shaped data (objects, arrays, strings, numbers, bigints, booleans, null): what
 * an event carries of an object the tables go on changing. Several times faster than structuredClone,
 * which serialises through V8's value serializer.
 */
export function cloneJson<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(cloneJson) as T;
  const copy: JsonObject = {};
  for (const key in value) copy[key] = cloneJson((value as JsonObject)[key]);
  return copy as T;
}

/**
 * Whether two JSON-shaped values are the same JSON (members set to undefined count as absent, as
 * JSON.stringify drops them), compared in place: a spec compare allocates nothing.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => jsonEqual(item ?? null, b[i] ?? null));
  }
  const left = a as JsonObject;
  const right = b as JsonObject;
  let count = 0;
  for (const key in left) {
    if (left[key] === undefined) continue;
    count += 1;
    if (!jsonEqual(left[key], right[key])) return false;
  }
  for (const key in right) if (right[key] !== undefined) count -= 1;
  return count === 0;
}

export interface TaskEventInput {
  Type: string;
  DisplayMessage?: string;
  Message?: string;
  Details?: Record<string, string | undefined>;
  [field: string]: unknown;
}

const TASK_EVENT_ZERO: JsonObject = {
  Details: {}, DiskLimit: 0, DisplayMessage: '', DownloadError: '', DriverError: '', DriverMessage: '',
  ExitCode: 0, FailedSibling: '', FailsTask: false, GenericSource: '', KillError: '', KillReason: '',
  KillTimeout: 0, Message: '', RestartReason: '', SetupError: '', Signal: 0, StartDelay: 0, TaskSignal: '',
  TaskSignalReason: '', Time: 0n, Type: '', ValidationError: '', VaultError: '',
};

/** A TaskEvent with every field present, as the client writes it. */
export function taskEvent(input: TaskEventInput, time: bigint): JsonObject {
  return { ...TASK_EVENT_ZERO, Details: {}, DisplayMessage: input.Message ?? '', ...input, Time: input.Time ?? time };
}

/** Events are capped at 10 per task, oldest dropped (client/allocrunner/taskrunner). */
export const MAX_TASK_EVENTS = 10;

export function taskState(): JsonObject {
  return { Events: [], Failed: false, FinishedAt: null, LastRestart: null, Restarts: 0, StartedAt: null, State: 'pending', TaskHandle: null };
}

export function resourcesOf(task: JsonObject): JsonObject {
  return { CPU: 0, Cores: 0, Devices: null, DiskMB: 0, IOPS: 0, MemoryMB: 0, MemoryMaxMB: 0, Networks: null, ...(task.Resources as JsonObject) };
}

/** The scheduler's AllocMetric for a placement on the fake's single node. */
export function allocMetric(nodeId: string, exhausted?: { dimension: string; task: string; resources: JsonObject }): JsonObject {
  return {
    AllocationTime: 50_000, ClassExhausted: null, ClassFiltered: null, CoalescedFailures: 0, ConstraintFiltered: null,
    DimensionExhausted: exhausted ? { [exhausted.dimension]: 1 } : null, NodesAvailable: { dc1: 1 }, NodesEvaluated: 1,
    NodesExhausted: exhausted ? 1 : 0, NodesFiltered: 0, QuotaExhausted: null,
    ResourcesExhausted: exhausted ? { [exhausted.task]: exhausted.resources } : null,
    ScoreMetaData: exhausted ? null : [{ NodeID: nodeId, NormScore: 0.5, Scores: { binpack: 0.5, 'job-anti-affinity': 0, 'node-affinity': 0, 'node-reschedule-penalty': 0 } }],
    Scores: null,
  };
}

export function allocatedResources(group: JsonObject): JsonObject {
  const tasks = group.Tasks as JsonObject[];
  const disk = (group.EphemeralDisk as JsonObject | null)?.SizeMB ?? 300;
  return {
    Shared: { DiskMB: disk, Networks: null, Ports: null },
    TaskLifecycles: Object.fromEntries(tasks.map((task) => [task.Name, task.Lifecycle ?? null])),
    Tasks: Object.fromEntries(
      tasks.map((task) => {
        const r = resourcesOf(task);
        return [task.Name, { Cpu: { CpuShares: r.CPU, ReservedCores: null }, Devices: null, Memory: { MemoryMB: r.MemoryMB, MemoryMaxMB: r.MemoryMaxMB }, Networks: null }];
      }),
    ),
  };
}

/** AllocListStub: not omitempty, every key present (nomad/structs AllocListStub). */
export function allocStub(alloc: JsonObject, job: JsonObject | undefined): JsonObject {
  return {
    ClientDescription: alloc.ClientDescription ?? '', ClientStatus: alloc.ClientStatus, CreateIndex: alloc.CreateIndex,
    CreateTime: alloc.CreateTime, DeploymentStatus: alloc.DeploymentStatus ?? null, DesiredDescription: alloc.DesiredDescription ?? '',
    DesiredStatus: alloc.DesiredStatus, DesiredTransition: alloc.DesiredTransition ?? { ForceReschedule: null, Migrate: null, Reschedule: null },
    EvalID: alloc.EvalID ?? '', FollowupEvalID: alloc.FollowupEvalID ?? '', ID: alloc.ID, JobID: alloc.JobID,
    JobType: job?.Type ?? '', JobVersion: job?.Version ?? 0, ModifyIndex: alloc.ModifyIndex, ModifyTime: alloc.ModifyTime,
    Name: alloc.Name, Namespace: alloc.Namespace, NodeID: alloc.NodeID ?? '', NodeName: alloc.NodeName ?? '',
    PreemptedAllocations: alloc.PreemptedAllocations ?? null, PreemptedByAllocation: alloc.PreemptedByAllocation ?? '',
    RescheduleTracker: alloc.RescheduleTracker ?? null, TaskGroup: alloc.TaskGroup, TaskStates: alloc.TaskStates ?? null,
  };
}

/** JobListStub with its JobSummary. */
export function jobStub(job: JsonObject, summary: JsonObject): JsonObject {
  return {
    CreateIndex: job.CreateIndex, Datacenters: job.Datacenters, ID: job.ID, JobModifyIndex: job.JobModifyIndex,
    JobSummary: summary, ModifyIndex: job.ModifyIndex, Multiregion: job.Multiregion ?? null, Name: job.Name,
    Namespace: job.Namespace, ParameterizedJob: job.ParameterizedJob !== null && job.ParameterizedJob !== undefined,
    ParentID: job.ParentID, Periodic: job.Periodic !== null && job.Periodic !== undefined, Priority: job.Priority,
    Status: job.Status, StatusDescription: job.StatusDescription, Stop: job.Stop, SubmitTime: job.SubmitTime, Type: job.Type,
  };
}

export const DEPLOYMENT_DESCRIPTIONS: Record<string, string> = {
  running: 'Deployment is running',
  paused: 'Deployment is paused',
  failed: 'Deployment marked as failed',
  successful: 'Deployment completed successfully',
  cancelled: 'Cancelled because job is stopped',
  superseded: 'Cancelled due to newer version of job',
};

/** A client task state summary as the client computes ClientStatus (client/allocrunner getClientStatus). */
export function clientStatusOf(states: Record<string, JsonObject>): { ClientStatus: string; ClientDescription: string } {
  const list = Object.values(states);
  if (list.some((s) => s.State === 'dead' && s.Failed)) return { ClientStatus: 'failed', ClientDescription: 'Failed tasks' };
  if (list.some((s) => s.State === 'running')) return { ClientStatus: 'running', ClientDescription: 'Tasks are running' };
  if (list.length > 0 && list.every((s) => s.State === 'dead')) return { ClientStatus: 'complete', ClientDescription: 'All tasks have completed' };
  return { ClientStatus: 'pending', ClientDescription: 'No tasks have started' };
}
