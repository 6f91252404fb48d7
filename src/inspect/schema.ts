/**
 * What the inspector serves, as JSON: `GET /api/snapshot`, every message of `WS /api/live`, and
 * `GET /api/allocations/<id>/timeline`. Shared by the server and the page (types only), so the two
 * cannot drift. Conventions, one form each:
 *   - an instant is an ISO 8601 string in UTC with milliseconds (`IsoTime`), or null when unknown;
 *   - a duration is a whole number of milliseconds, in a field whose name ends in `Ms`.
 * `schemaVersion` changes when a field changes meaning or goes away (not when one is added).
 */
import type { AllocationHealthState } from '../../machines/allocationHealth.js';
import type { HealthPolicySource } from '../../machines/allocationHealthTypes.js';
import type { ConnectionState, SupervisorProblem } from '../supervisor/types.js';

export const INSPECTOR_SCHEMA_VERSION = 1;

/** "2026-11-29T18:00:00.000Z". */
export type IsoTime = string;

export interface TaskInfo {
  name: string;
  state: string;
  failed: boolean;
  restarts: number;
  startedAt: IsoTime | null;
  finishedAt: IsoTime | null;
  /** Lifecycle hook (prestart, poststart, poststop), null for a main task. */
  hook: string | null;
  sidecar: boolean;
}

export interface VerdictInfo {
  /** null for an allocation stopped before it was judged. */
  healthy: boolean | null;
  at: IsoTime;
  /** Per task, Nomad's explanation. */
  reasons: { task: string; reason: string }[];
}

export interface PolicyInfo {
  source: HealthPolicySource;
  minHealthyTimeMs: number;
  healthyDeadlineMs: number;
  useChecks: boolean;
  checks: { task: string; service: string; name: string; onUpdate: string }[];
}

export interface AllocationInfo {
  id: string;
  name: string | null;
  namespace: string;
  jobId: string;
  jobVersion: number | null;
  taskGroup: string;
  deploymentId: string | null;
  state: AllocationHealthState;
  finished: boolean;
  /** The last move of the health machine. */
  lastTransition: { from: AllocationHealthState; to: AllocationHealthState; at: IsoTime } | null;
  policy: PolicyInfo;
  clientStatus: string;
  desiredStatus: string;
  tasks: TaskInfo[];
  checks: { task: string; service: string; name: string; status: string }[];
  /** When watching began: the healthy deadline counts from it. */
  watchingSince: IsoTime;
  /** The latest task start: min_healthy_time counts from it. */
  latestStart: IsoTime | null;
  /** When it becomes healthy if nothing changes (or became, once healthy). */
  healthyAt: IsoTime | null;
  deadlineAt: IsoTime;
  checksPassingSince: IsoTime | null;
  /** Why the last update was ignored (malformed). */
  rejected: string | null;
  verdict: VerdictInfo | null;
  /** Time of the machine's latest step. */
  updatedAt: IsoTime;
}

/**
 * One step of an allocation's health machine, as Stately's inspector lists them: what arrived
 * (the allocation as first seen, an update of it, of its checks, or a timer), what it changed in
 * words, and the state after it.
 */
export interface TimelineEntry {
  /** Counts the allocation's steps from 1 (earlier ones may have been let go). */
  seq: number;
  at: IsoTime;
  cause: 'tracked' | 'allocation' | 'checks' | 'timer';
  changes: string[];
  state: AllocationHealthState;
  move: { from: AllocationHealthState; to: AllocationHealthState } | null;
}

export interface TimelineInfo {
  allocationId: string;
  /** The latest steps, oldest first. */
  entries: TimelineEntry[];
  /** Steps let go from the front (the timeline keeps the latest `timelineLimit`). */
  dropped: number;
}

/** One task group of a deployment, in Nomad's counts (what `nomad deployment status` and the UI show). */
export interface DeploymentGroupInfo {
  name: string;
  desiredTotal: number;
  placed: number;
  healthy: number;
  unhealthy: number;
  desiredCanaries: number;
  placedCanaries: number;
  promoted: boolean;
  autoRevert: boolean;
  autoPromote: boolean;
  progressDeadlineMs: number;
  requireProgressBy: IsoTime | null;
}

export interface DeploymentInfo {
  id: string;
  namespace: string;
  jobId: string;
  jobVersion: number;
  /** running, successful, failed, cancelled, paused, pending, blocked, unblocking, initializing. */
  status: string;
  statusDescription: string;
  groups: DeploymentGroupInfo[];
  /** When Warden last heard of it. */
  updatedAt: IsoTime;
}

export interface ConnectionInfo {
  state: ConnectionState;
  attempt: number;
  lastError: string | null;
  retryInMs: number | null;
  index: number;
  since: IsoTime;
}

export interface EvaluationInfo {
  id: string;
  state: string;
  status: string | null;
  jobId: string | null;
  description: string | null;
  chain: string[];
  /** In the Nomad CLI's words (placement failures with their metrics). */
  outcome: { ok: boolean; message: string } | null;
}

export interface ExecSessionInfo {
  id: string;
  allocId: string;
  task: string;
  tty: boolean;
  state: string;
  outcome: string | null;
}

/** A runner pool's environment (src/runners): its counts, and each runner's state and the work running in it. */
export interface PoolInfo {
  id: number;
  /** registering, active, updating, deleting; `deleted` once gone (then dropped). */
  state: string;
  driver: string;
  poolSize: number;
  idle: number;
  used: number;
  /** Registered, not running yet. */
  provisioning: number;
  /** Waiting after runners failed to be placed or to start; lastError says why. */
  backingOff: boolean;
  lastError: string | null;
  runners: { id: string; state: string; inactivityTimeoutS: number; executions: { kind: string; startedAt: IsoTime }[] }[];
}

export interface ProblemInfo {
  seq: number;
  at: IsoTime;
  kind: SupervisorProblem['kind'];
  message: string;
  allocId: string | null;
}

export type InspectorDelta =
  | { type: 'connection'; connection: ConnectionInfo }
  | { type: 'allocation'; allocation: AllocationInfo }
  | { type: 'deployment'; deployment: DeploymentInfo }
  | { type: 'evaluation'; evaluation: EvaluationInfo }
  | { type: 'execSession'; execSession: ExecSessionInfo }
  | { type: 'problem'; problem: ProblemInfo }
  | { type: 'pool'; pool: PoolInfo }
  /** Time passing, so that countdowns move between changes. */
  | { type: 'tick' };

export interface InspectorSnapshot {
  type: 'snapshot';
  schemaVersion: typeof INSPECTOR_SCHEMA_VERSION;
  /** The server's clock (virtual in the demo): the page counts down from it. */
  now: IsoTime;
  /** Set on a snapshot sent instead of the deltas a slow client could not take. */
  resynced: boolean;
  finishedLimit: number;
  /** How many deployments, evaluations, exec sessions and problems the server keeps (the latest). */
  recentLimit: number;
  connection: ConnectionInfo;
  allocations: AllocationInfo[];
  deployments: DeploymentInfo[];
  evaluations: EvaluationInfo[];
  execSessions: ExecSessionInfo[];
  problems: ProblemInfo[];
  /** Runner pools, when the model follows some (attachPools); absent from servers without them. */
  pools?: PoolInfo[];
}

/** A delta as sent, with the server's clock. */
export type InspectorMessage = InspectorDelta & { now: IsoTime };

/** Sent on `WS /api/live` to the one client that follows the allocation (see FollowRequest). */
export interface TimelineMessage {
  type: 'timeline';
  now: IsoTime;
  /** The allocation followed. */
  allocationId: string;
  /** null: the server keeps no timeline for it (unknown, or no inspection events). */
  timeline: TimelineInfo | null;
}

/** What a page may send on `WS /api/live`: follow one allocation's timeline (null: none). */
export interface FollowRequest {
  type: 'follow';
  allocationId: string | null;
}

export type LiveMessage = InspectorSnapshot | InspectorMessage | TimelineMessage;

/** `GET /api/allocations/<id>/timeline`. */
export interface TimelineResponse {
  schemaVersion: typeof INSPECTOR_SCHEMA_VERSION;
  now: IsoTime;
  timeline: TimelineInfo;
}
