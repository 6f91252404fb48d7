/**
 * Shapes of the Nomad HTTP API objects Warden reads and writes, with Nomad's own field names
 * (nomad/structs, api/ in hashicorp/nomad; see the recorded fixtures of Nomad 1.1.2).
 *
 * - A field Nomad leaves out when it is zero (Allocation and Evaluation are whole-struct
 *   omitempty) is optional here; a field Nomad writes as `null` when unset is `| null`.
 * - Every object passes unknown fields through (`Passthrough`): newer Nomad versions add fields,
 *   and Warden forwards what it does not read untouched.
 * - Durations are integer nanoseconds (`Nanoseconds`). Unix-nanosecond timestamps exceed 2^53 and
 *   are `NanoTime`: a UnixNanos when decoded by Warden's parser (src/nomad/json.ts, exact; its
 *   bigint built when asked), a bigint or a number when built in code (a number parsed by plain
 *   JSON.parse is rounded to ~256 ns).
 * - RFC3339Nano times are strings, `null` when zero (old agents wrote "0001-01-01T00:00:00Z").
 */
import type { UnixNanos } from './unixNanos.js';

/** Unknown fields pass through untouched. */
export type Passthrough = Record<string, unknown>;

/** An integer number of nanoseconds (a Go time.Duration). */
export type Nanoseconds = number;

/** Unix time in nanoseconds: exact UnixNanos from Warden's decoder, an exact bigint, or a (possibly rounded) number. */
export type NanoTime = UnixNanos | bigint | number;

/** RFC3339Nano timestamp, e.g. "2026-11-29T17:05:04.256718293Z"; null when zero. */
export type Rfc3339 = string;

// ---------------------------------------------------------------------------------------------
// Allocations (nomad/structs/alloc.go)

export type AllocClientStatus = 'pending' | 'running' | 'complete' | 'failed' | 'lost' | 'unknown';
export type AllocDesiredStatus = 'run' | 'stop' | 'evict';
export type TaskStateName = 'pending' | 'running' | 'dead';

/** One entry of a task's event list (capped at 10 per task by Nomad). */
export interface TaskEvent extends Passthrough {
  /** "Received", "Started", "Terminated", "Alloc Unhealthy", ... (spaces included). */
  Type: string;
  Time: NanoTime;
  Message?: string;
  DisplayMessage?: string;
  Details?: Record<string, string> | null;
  FailsTask?: boolean;
  RestartReason?: string;
  SetupError?: string;
  DriverError?: string;
  ExitCode?: number;
  Signal?: number;
  KillTimeout?: Nanoseconds;
  KillError?: string;
  KillReason?: string;
  StartDelay?: Nanoseconds;
  DownloadError?: string;
  ValidationError?: string;
  DiskLimit?: number;
  FailedSibling?: string;
  VaultError?: string;
  TaskSignalReason?: string;
  TaskSignal?: string;
  DriverMessage?: string;
  GenericSource?: string;
}

export interface TaskState extends Passthrough {
  State: TaskStateName;
  /** dead + Failed:false = succeeded; dead + Failed:true = failed. */
  Failed: boolean;
  Restarts: number;
  LastRestart: Rfc3339 | null;
  StartedAt: Rfc3339 | null;
  FinishedAt: Rfc3339 | null;
  Events: TaskEvent[] | null;
}

/** Absent until set; `Healthy: null` means undecided. */
export interface AllocDeploymentStatus extends Passthrough {
  Healthy: boolean | null;
  Timestamp: Rfc3339 | null;
  Canary: boolean;
  ModifyIndex: number;
}

/** Absent while every member is unset; once one is set all keys appear, unset ones null. */
export interface DesiredTransition extends Passthrough {
  Migrate?: boolean | null;
  Reschedule?: boolean | null;
  ForceReschedule?: boolean | null;
  NoShutdownDelay?: boolean | null;
}

export interface RescheduleEvent extends Passthrough {
  RescheduleTime: NanoTime;
  PrevAllocID: string;
  PrevNodeID: string;
  Delay: Nanoseconds;
}

export interface RescheduleTracker extends Passthrough {
  Events: RescheduleEvent[] | null;
  LastReschedule?: string;
}

export interface Port extends Passthrough {
  Label: string;
  Value?: number;
  To?: number;
  HostNetwork?: string;
}

export interface AllocatedPortMapping extends Passthrough {
  Label: string;
  /** Host port. */
  Value?: number;
  /** Mapped (container) port; absent when 0 since Nomad 1.9. */
  To?: number;
  HostIP?: string;
}

export interface NetworkResource extends Passthrough {
  Mode?: string;
  Device?: string;
  CIDR?: string;
  IP?: string;
  Hostname?: string;
  MBits?: number;
  ReservedPorts?: Port[] | null;
  DynamicPorts?: Port[] | null;
}

export interface AllocatedSharedResources extends Passthrough {
  DiskMB?: number;
  Networks?: NetworkResource[] | null;
  Ports?: AllocatedPortMapping[] | null;
}

export interface AllocatedResources extends Passthrough {
  Shared?: AllocatedSharedResources;
  Tasks?: Record<string, Passthrough>;
  TaskLifecycles?: Record<string, TaskLifecycle | null>;
}

export interface NetworkStatus extends Passthrough {
  InterfaceName?: string;
  Address?: string;
  AddressIPv6?: string;
}

/**
 * An allocation. From GET /v1/allocation/:id it embeds the Job; in event-stream payloads the `Job`
 * key is absent. Zero-valued top-level fields are absent (whole-struct omitempty).
 */
export interface Allocation extends Passthrough {
  ID: string;
  Namespace?: string;
  EvalID?: string;
  /** "<job>.<group>[<index>]" */
  Name?: string;
  NodeID?: string;
  NodeName?: string;
  JobID: string;
  Job?: Job | null;
  TaskGroup: string;
  AllocatedResources?: AllocatedResources | null;
  Metrics?: AllocMetric | null;
  DesiredStatus?: AllocDesiredStatus;
  DesiredDescription?: string;
  DesiredTransition?: DesiredTransition;
  ClientStatus?: AllocClientStatus;
  ClientDescription?: string;
  TaskStates?: Record<string, TaskState> | null;
  PreviousAllocation?: string;
  NextAllocation?: string;
  DeploymentID?: string;
  DeploymentStatus?: AllocDeploymentStatus | null;
  RescheduleTracker?: RescheduleTracker | null;
  NetworkStatus?: NetworkStatus | null;
  /** Server-side changes of the client status, with their times (a disconnect's `unknown`, `lost`; 1.3+). */
  AllocStates?: AllocState[] | null;
  FollowupEvalID?: string;
  PreemptedAllocations?: string[] | null;
  PreemptedByAllocation?: string;
  CreateIndex?: number;
  ModifyIndex: number;
  AllocModifyIndex?: number;
  CreateTime?: NanoTime;
  ModifyTime?: NanoTime;
}

/** nomad/structs AllocState: Field 0 is the ClientStatus. */
export interface AllocState extends Passthrough {
  Field: number;
  Value: string;
  Time: Rfc3339 | null;
}

/** Element of /v1/job/:id/allocations and /v1/allocations: every key present (not omitempty). */
export interface AllocationListStub extends Passthrough {
  ID: string;
  EvalID: string;
  Name: string;
  Namespace: string;
  NodeID: string;
  NodeName: string;
  JobID: string;
  JobType: JobType;
  JobVersion: number;
  TaskGroup: string;
  AllocatedResources?: AllocatedResources | null;
  DesiredStatus: AllocDesiredStatus;
  DesiredDescription: string;
  ClientStatus: AllocClientStatus;
  ClientDescription: string;
  DesiredTransition: DesiredTransition;
  TaskStates: Record<string, TaskState> | null;
  DeploymentStatus: AllocDeploymentStatus | null;
  FollowupEvalID: string;
  NextAllocation?: string;
  RescheduleTracker: RescheduleTracker | null;
  PreemptedAllocations: string[] | null;
  PreemptedByAllocation: string;
  CreateIndex: number;
  ModifyIndex: number;
  CreateTime: NanoTime;
  ModifyTime: NanoTime;
}

// ---------------------------------------------------------------------------------------------
// Jobs (nomad/structs/structs.go Job, TaskGroup, Task; api/jobs.go)

export type JobType = 'service' | 'batch' | 'system' | 'sysbatch';
export type JobStatus = 'pending' | 'running' | 'dead';
export type HealthCheckMode = 'checks' | 'task_states' | 'manual';
export type OnUpdate = 'require_healthy' | 'ignore_warnings' | 'ignore';

export interface UpdateStrategy extends Passthrough {
  Stagger?: Nanoseconds;
  /** 0 = no deployments for the group. */
  MaxParallel?: number;
  HealthCheck?: HealthCheckMode;
  MinHealthyTime?: Nanoseconds;
  HealthyDeadline?: Nanoseconds;
  ProgressDeadline?: Nanoseconds;
  AutoRevert?: boolean;
  AutoPromote?: boolean;
  Canary?: number;
}

export interface MigrateStrategy extends Passthrough {
  MaxParallel?: number;
  HealthCheck?: Exclude<HealthCheckMode, 'manual'>;
  MinHealthyTime?: Nanoseconds;
  HealthyDeadline?: Nanoseconds;
}

export interface TaskLifecycle extends Passthrough {
  Hook: 'prestart' | 'poststart' | 'poststop';
  Sidecar: boolean;
}

export interface ServiceCheck extends Passthrough {
  Name: string;
  Type: string;
  Command?: string;
  Args?: string[] | null;
  Path?: string;
  Protocol?: string;
  PortLabel?: string;
  AddressMode?: string;
  Interval?: Nanoseconds;
  Timeout?: Nanoseconds;
  InitialStatus?: string;
  Method?: string;
  TaskName?: string;
  SuccessBeforePassing?: number;
  FailuresBeforeCritical?: number;
  FailuresBeforeWarning?: number;
  /** Empty means inherit the service's OnUpdate. */
  OnUpdate?: OnUpdate | '';
}

export interface Service extends Passthrough {
  Name: string;
  TaskName?: string;
  PortLabel?: string;
  AddressMode?: string;
  Address?: string;
  Tags?: string[] | null;
  CanaryTags?: string[] | null;
  Checks?: ServiceCheck[] | null;
  Meta?: Record<string, string> | null;
  OnUpdate?: OnUpdate | '';
  /** "consul" (default when empty) or "nomad" (v1.3+). */
  Provider?: string;
  Namespace?: string;
}

export interface RestartPolicy extends Passthrough {
  Attempts?: number;
  Interval?: Nanoseconds;
  Delay?: Nanoseconds;
  Mode?: string;
}

export interface ReschedulePolicy extends Passthrough {
  Attempts?: number;
  Interval?: Nanoseconds;
  Delay?: Nanoseconds;
  DelayFunction?: string;
  MaxDelay?: Nanoseconds;
  Unlimited?: boolean;
}

export interface Resources extends Passthrough {
  CPU?: number;
  Cores?: number;
  MemoryMB?: number;
  MemoryMaxMB?: number;
  DiskMB?: number;
  Networks?: NetworkResource[] | null;
}

export interface Task extends Passthrough {
  Name: string;
  Driver: string;
  User?: string;
  Config?: Record<string, unknown> | null;
  Env?: Record<string, string> | null;
  Services?: Service[] | null;
  Resources?: Resources | null;
  RestartPolicy?: RestartPolicy | null;
  /** Absent or null for a main task. */
  Lifecycle?: TaskLifecycle | null;
  Leader?: boolean;
  KillTimeout?: Nanoseconds;
  KillSignal?: string;
  ShutdownDelay?: Nanoseconds;
  Meta?: Record<string, string> | null;
  Kind?: string;
}

export interface TaskGroup extends Passthrough {
  Name: string;
  Count?: number;
  Update?: UpdateStrategy | null;
  Migrate?: MigrateStrategy | null;
  Tasks: Task[];
  Services?: Service[] | null;
  Networks?: NetworkResource[] | null;
  RestartPolicy?: RestartPolicy | null;
  ReschedulePolicy?: ReschedulePolicy | null;
  Meta?: Record<string, string> | null;
  ShutdownDelay?: Nanoseconds | null;
  /** How long an allocation on a disconnected client stays `unknown` before it is lost (1.3–1.7; deprecated by Disconnect). */
  MaxClientDisconnect?: Nanoseconds | null;
  /** The disconnect block (1.8+). */
  Disconnect?: DisconnectStrategy | null;
}

/** A group's disconnect block (nomad/structs DisconnectStrategy, 1.8+). */
export interface DisconnectStrategy extends Passthrough {
  LostAfter?: Nanoseconds;
  Replace?: boolean | null;
  Reconcile?: string;
  StopOnClientAfter?: Nanoseconds | null;
}

export interface Job extends Passthrough {
  ID: string;
  Name?: string;
  Namespace?: string;
  Region?: string;
  ParentID?: string;
  Type?: JobType;
  Priority?: number;
  AllAtOnce?: boolean;
  Datacenters?: string[] | null;
  NodePool?: string;
  TaskGroups?: TaskGroup[] | null;
  Update?: UpdateStrategy | null;
  Periodic?: Passthrough | null;
  ParameterizedJob?: Passthrough | null;
  Dispatched?: boolean;
  /** base64 */
  Payload?: string | null;
  Meta?: Record<string, string> | null;
  Stop?: boolean;
  Status?: JobStatus;
  StatusDescription?: string;
  Stable?: boolean;
  Version?: number;
  SubmitTime?: NanoTime;
  CreateIndex?: number;
  ModifyIndex?: number;
  JobModifyIndex?: number;
}

/** A client node (GET /v1/node/:id; /v1/nodes lists NodeListStubs, which carry Version but no Attributes or Meta). */
export interface NomadNode extends Passthrough {
  ID: string;
  Name?: string;
  Datacenter?: string;
  NodeClass?: string;
  /** 1.6+ */
  NodePool?: string;
  Attributes?: Record<string, string> | null;
  Meta?: Record<string, string> | null;
  Status?: string;
}

export interface JobSummaryCounts extends Passthrough {
  Queued: number;
  Complete: number;
  Failed: number;
  Running: number;
  Starting: number;
  Lost: number;
  Unknown?: number;
}

export interface JobSummary extends Passthrough {
  JobID: string;
  Namespace: string;
  Summary: Record<string, JobSummaryCounts> | null;
  Children: { Pending: number; Running: number; Dead: number } | null;
  CreateIndex: number;
  ModifyIndex: number;
}

/** A task driver as a node fingerprinted it. */
export interface DriverInfo extends Passthrough {
  Detected?: boolean;
  Healthy?: boolean;
  HealthDescription?: string;
}

/** Element of GET /v1/nodes. */
export interface NodeListStub extends Passthrough {
  ID: string;
  Name: string;
  Datacenter: string;
  Status: string;
  SchedulingEligibility?: string;
  Drain?: boolean;
  /** By driver name (Nomad 0.9+). */
  Drivers?: Record<string, DriverInfo> | null;
  /** The client's Nomad version. */
  Version?: string;
  /** 1.6+ */
  NodePool?: string;
}

/** Element of GET /v1/jobs. */
export interface JobListStub extends Passthrough {
  ID: string;
  ParentID: string;
  Name: string;
  Namespace?: string;
  Datacenters: string[] | null;
  Type: JobType;
  Priority: number;
  Periodic: boolean;
  ParameterizedJob: boolean;
  Stop: boolean;
  Status: JobStatus;
  StatusDescription: string;
  JobSummary: JobSummary | null;
  CreateIndex: number;
  ModifyIndex: number;
  JobModifyIndex: number;
  SubmitTime: NanoTime;
  Meta?: Record<string, string> | null;
}

/** PUT /v1/jobs body. */
export interface JobRegisterRequest {
  Job: Job;
  /** With JobModifyIndex: register only if the job's current JobModifyIndex equals it (0 = create only). */
  EnforceIndex?: boolean;
  JobModifyIndex?: number;
  PolicyOverride?: boolean;
  PreserveCounts?: boolean;
}

/** Query metadata Nomad embeds in write responses. LastContact here is nanoseconds. */
export interface WriteMeta extends Passthrough {
  Index?: number;
  LastContact?: number;
  KnownLeader?: boolean;
}

export interface JobRegisterResponse extends WriteMeta {
  /** "" for periodic and parameterized jobs (no evaluation is created). */
  EvalID: string;
  EvalCreateIndex: number;
  JobModifyIndex: number;
  /** Multi-error text, "" when none. */
  Warnings: string;
}

/** PUT /v1/job/:id/scale answers with Nomad's JobRegisterResponse (EvalID "" when only an event was recorded). */
export type JobScaleResponse = JobRegisterResponse;

export interface JobDeregisterResponse extends WriteMeta {
  EvalID: string;
  EvalCreateIndex: number;
  JobModifyIndex: number;
}

/** POST /v1/jobs/parse body. */
export interface JobsParseRequest {
  JobHCL: string;
  Canonicalize?: boolean;
  /** Nomad 1.1.2 only: parse as HCL1. */
  hclv1?: boolean;
  Variables?: string;
}

// ---------------------------------------------------------------------------------------------
// Evaluations (nomad/structs/eval.go; whole-struct omitempty)

/** `canceled` with one "l" (deployments spell it `cancelled`). */
export type EvaluationStatus = 'blocked' | 'pending' | 'complete' | 'failed' | 'canceled';

/** Placement metrics. Not omitempty: empty maps are null. */
export interface AllocMetric extends Passthrough {
  NodesEvaluated: number;
  NodesFiltered: number;
  NodesInPool?: number;
  NodePool?: string;
  NodesAvailable: Record<string, number> | null;
  ClassFiltered: Record<string, number> | null;
  ConstraintFiltered: Record<string, number> | null;
  NodesExhausted: number;
  ClassExhausted: Record<string, number> | null;
  /** e.g. { memory: 1 }, { "network: port collision": 2 } */
  DimensionExhausted: Record<string, number> | null;
  QuotaExhausted: string[] | null;
  ResourcesExhausted: Record<string, Resources> | null;
  ScoreMetaData?: Passthrough[] | null;
  AllocationTime: Nanoseconds;
  /** Failed placements in the group = CoalescedFailures + 1. */
  CoalescedFailures: number;
}

export interface Evaluation extends Passthrough {
  ID: string;
  Namespace?: string;
  Priority?: number;
  Type?: JobType;
  TriggeredBy?: string;
  JobID?: string;
  JobModifyIndex?: number;
  NodeID?: string;
  DeploymentID?: string;
  Status: EvaluationStatus;
  StatusDescription?: string;
  /** Delay before NextEval, nanoseconds. */
  Wait?: Nanoseconds;
  WaitUntil?: Rfc3339 | null;
  NextEval?: string;
  PreviousEval?: string;
  /** The `blocked` evaluation created when placements failed. */
  BlockedEval?: string;
  FailedTGAllocs?: Record<string, AllocMetric> | null;
  ClassEligibility?: Record<string, boolean> | null;
  QuotaLimitReached?: string;
  EscapedComputedClass?: boolean;
  QueuedAllocations?: Record<string, number> | null;
  SnapshotIndex?: number;
  CreateIndex?: number;
  ModifyIndex?: number;
  CreateTime?: NanoTime;
  ModifyTime?: NanoTime;
}

// ---------------------------------------------------------------------------------------------
// Deployments (nomad/structs/deployment.go)

/** `cancelled` with two "l"s. */
export type DeploymentStatusName =
  | 'running'
  | 'paused'
  | 'failed'
  | 'successful'
  | 'cancelled'
  | 'pending'
  | 'blocked'
  | 'unblocking'
  | 'initializing';

export interface DeploymentState extends Passthrough {
  AutoRevert: boolean;
  AutoPromote: boolean;
  ProgressDeadline: Nanoseconds;
  RequireProgressBy: Rfc3339 | null;
  Promoted: boolean;
  PlacedCanaries: string[] | null;
  DesiredCanaries: number;
  DesiredTotal: number;
  PlacedAllocs: number;
  HealthyAllocs: number;
  UnhealthyAllocs: number;
}

export interface Deployment extends Passthrough {
  ID: string;
  Namespace: string;
  JobID: string;
  JobVersion: number;
  JobModifyIndex: number;
  JobSpecModifyIndex?: number;
  JobCreateIndex: number;
  IsMultiregion?: boolean;
  TaskGroups: Record<string, DeploymentState> | null;
  Status: DeploymentStatusName;
  StatusDescription: string;
  EvalPriority?: number;
  CreateIndex: number;
  ModifyIndex: number;
  CreateTime?: NanoTime;
  ModifyTime?: NanoTime;
}

/** PUT /v1/deployment/promote/:id body; the ID must be repeated in the body. */
export interface DeploymentPromoteRequest {
  DeploymentID: string;
  All?: boolean;
  Groups?: string[];
}

export interface DeploymentUpdateResponse extends WriteMeta {
  EvalID: string;
  EvalCreateIndex: number;
  DeploymentModifyIndex: number;
  RevertedJobVersion?: number | null;
}

// ---------------------------------------------------------------------------------------------
// Event stream (nomad/structs/event.go)

/** Topics Warden subscribes to by name; others (Node, ACLToken, Service, ...) pass as strings. */
export type KnownTopic = 'Job' | 'Evaluation' | 'Allocation' | 'Deployment' | 'Node';
export type Topic = KnownTopic | '*' | (string & {});

interface EventBase<T extends string, P> {
  Topic: T;
  /** The raft message type (PlanResult, AllocationUpdated, JobRegistered, ...), not a per-topic verb. */
  Type: string;
  Key: string;
  /** "" for non-namespaced topics (Node, ACL). */
  Namespace: string;
  /** Allocation/Evaluation: [JobID, DeploymentID]; Deployment: [JobID]; null when none. */
  FilterKeys: string[] | null;
  Index: number;
  Payload: P;
}

export type AllocationEvent = EventBase<'Allocation', { Allocation: Allocation } & Passthrough>;
/** `Deleted: true` on a purge (Nomad 2.0+). */
export type JobEvent = EventBase<'Job', { Job: Job; Deleted?: boolean } & Passthrough>;
export type EvaluationEvent = EventBase<'Evaluation', { Evaluation: Evaluation } & Passthrough>;
export type DeploymentEvent = EventBase<'Deployment', { Deployment: Deployment } & Passthrough>;
/** Any other topic, payload untouched. */
export type OtherEvent = EventBase<string, Passthrough>;

/** Narrow with `event.Topic === 'Allocation'` etc. after a payload check (see src/nomad/events.ts). */
export type NomadEvent = AllocationEvent | JobEvent | EvaluationEvent | DeploymentEvent | OtherEvent;

/** One NDJSON line of /v1/event/stream: one raft index. A heartbeat is `{}`. */
export interface EventFrame {
  Index: number;
  Events: NomadEvent[];
}

// ---------------------------------------------------------------------------------------------
// Query metadata from response headers (X-Nomad-Index, X-Nomad-Knownleader, X-Nomad-Lastcontact)

export interface QueryMeta {
  /** X-Nomad-Index; 0 when the header is absent. */
  lastIndex: number;
  knownLeader: boolean;
  /** X-Nomad-Lastcontact, milliseconds. */
  lastContactMs: number;
  /** X-Nomad-Nexttoken, when paginating. */
  nextToken?: string;
}
