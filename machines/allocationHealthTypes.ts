/**
 * The vocabulary of the allocation health machine: the compact view of an allocation it is fed,
 * the health policy it judges by, and the outcome it reaches. Times are milliseconds since the
 * epoch on the supervisor's clock axis; durations are milliseconds.
 */
import type { NomadRules } from './nomadRules.js';

export type TaskRunState = 'pending' | 'running' | 'dead';
export type LifecycleHook = 'prestart' | 'poststart' | 'poststop';

/** One task as the health rules see it (Nomad's TaskState joined with the task's lifecycle). */
export interface TaskView {
  readonly state: TaskRunState;
  readonly failed: boolean;
  readonly restarts: number;
  readonly startedAt: number | null;
  readonly finishedAt: number | null;
  /** null for a main task. */
  readonly hook: LifecycleHook | null;
  readonly sidecar: boolean;
}

/** The parts of an allocation that can change its health; every task of the group is present. */
export interface AllocationView {
  readonly clientStatus: string;
  readonly desiredStatus: string;
  readonly tasks: Readonly<Record<string, TaskView>>;
}

export type CheckStatus = 'passing' | 'warning' | 'critical';
export type CheckOnUpdate = 'require_healthy' | 'ignore_warnings' | 'ignore';

/** What names a check: its task ('' for a group service), its service and its own name. */
export interface CheckIdentity {
  readonly task: string;
  readonly service: string;
  readonly name: string;
}

/** One registered service check, as the service catalogue reports it. */
export interface CheckView extends CheckIdentity {
  readonly status: CheckStatus;
  /**
   * A check of the service's Connect sidecar proxy: not in the job spec, so never counted against
   * the expected checks; whether it must pass depends on the Nomad release (NomadRules.sidecarChecksBlock).
   */
  readonly sidecar?: boolean;
}

/** One check the job declares, its names interpolated as the client interpolates them. */
export interface ExpectedCheck extends CheckIdentity {
  readonly onUpdate: CheckOnUpdate;
  /**
   * The name Nomad compares the registered checks against, when it differs from `name`: Nomad 1.4.5
   * and 1.5.0 counted checks by their uninterpolated names (NomadRules: missingChecksFail without
   * interpolatedCheckNames).
   */
  readonly comparedAs?: string;
}

export type HealthPolicySource = 'update' | 'migrate' | 'opt-in';

/** The rules of the Nomad release that judges (machines/nomadRules.ts). */
export type { NomadRules } from './nomadRules.js';

export interface HealthPolicy {
  /** Where the parameters came from: the group's update block (deployment), its migrate block, or the user. */
  readonly source: HealthPolicySource;
  readonly minHealthyTimeMs: number;
  readonly healthyDeadlineMs: number;
  /** health_check = "checks" (Nomad's useChecks); checks matter only when `expectedChecks` is non-empty. */
  readonly useChecks: boolean;
  readonly expectedChecks: readonly ExpectedCheck[];
  /**
   * Batch work under an opt-in policy: a task that exited successfully has done its job, so it
   * counts as healthy from its finish instead of failing the allocation. Nomad never watches such
   * jobs, so its own policies leave this false.
   */
  readonly completedTasksAreHealthy: boolean;
  /** The rules of the Nomad release the allocation's cluster runs. */
  readonly rules: NomadRules;
  /**
   * How long Nomad keeps the allocation of a client that stopped heartbeating before it calls it
   * lost (the group's disconnect.lost_after, or max_client_disconnect before 1.8); null: at once.
   */
  readonly lostAfterMs: number | null;
}

export interface HealthVerdict {
  readonly healthy: boolean;
  readonly at: number;
  /** Per task, Nomad's explanation of why it kept the allocation from being healthy. */
  readonly reasons: Readonly<Record<string, string>>;
}

/** Desired status stop or evict: the allocation is not judged. */
export interface HealthStopped {
  readonly stopped: true;
  readonly at: number;
}

export type HealthOutcome = HealthVerdict | HealthStopped;

/**
 * Not from the machine: what a runtime reports when the allocation's history, as the data keeps it,
 * cannot decide the verdict (Nomad keeps only the last events of a task), rather than guess.
 */
export interface HealthUndetermined {
  readonly undetermined: true;
  /** Where the history that is kept begins. */
  readonly at: number;
  readonly reason: string;
}

export interface AllocationHealthInput {
  readonly policy: HealthPolicy;
  /** When the machine starts judging. */
  readonly now: number;
  /**
   * When Nomad began watching the allocation (the alloc runner's start, or its re-watch when an
   * in-place update moved it into a new deployment), which the healthy deadline and the
   * min_healthy_time window count from; it can lie before `now` when judging starts late. Absent,
   * unusable or after `now`: `now` is taken.
   */
  readonly watchingSince?: number;
}

/**
 * The machine's one event: what was observed at `now`. A new compact view of the allocation, its
 * registered checks, or neither (time passed: the runtime sends that when `wakeAt(context)` is due).
 */
export interface AllocationHealthEvent {
  readonly type: 'observe';
  readonly now: number;
  readonly view?: AllocationView;
  readonly checks?: readonly CheckView[];
}

/** What the task states say, summarised once per update. */
export type TaskAssessment =
  /** A task failed, or finished when it must keep running; `at` is its FinishedAt when known. */
  | { readonly kind: 'failed'; readonly at: number | null }
  /** Not every task has started yet. */
  | { readonly kind: 'starting'; readonly someRunning: boolean }
  /** Every evaluated task has started; the latest start opens the min_healthy_time window. */
  | { readonly kind: 'started'; readonly latestStart: number };

export interface AllocationHealthContext {
  readonly policy: HealthPolicy;
  readonly view: AllocationView;
  readonly checks: readonly CheckView[];
  readonly tasks: TaskAssessment;
  /** Time of the latest event. */
  readonly now: number;
  /**
   * When watching began as the data tells (the input's `watchingSince`, when usable): no task's
   * min_healthy_time window starts before it. Null when unknown: the first sight is no bound, as
   * the data may reach us after the tasks started.
   */
  readonly watchingSince: number | null;
  /** When watching began + healthy_deadline. */
  readonly deadlineAt: number;
  /** Why the input's `watchingSince` was not used (the deadline then counts from the input's `now`). */
  readonly watchingSinceIgnored: string | null;
  /**
   * Since when the checks have been continuously passing: Nomad's check watcher arms its
   * min_healthy_time timer then, and re-arms it each time it fires before the tasks are healthy.
   */
  readonly checksPassingSince: number | null;
  /** Since when the allocation's client has been disconnected (ClientStatus unknown), or null. */
  readonly disconnectedAt: number | null;
  /** Why the last event was ignored, if it was malformed. */
  readonly rejected: string | null;
  readonly outcome: HealthOutcome | null;
}
