/**
 * The pure rules of Nomad's allocation health tracker (client/allochealth/tracker.go on Nomad's
 * main branch), written as functions of the compact allocation view so the machine's guards stay
 * one-liners.
 */
import type {
  AllocationHealthContext,
  AllocationView,
  CheckView,
  HealthPolicy,
  TaskAssessment,
  TaskView,
} from './allocationHealthTypes.js';

/** Non-sidecar lifecycle tasks are ephemeral: they may exit without hurting the allocation. */
function ephemeralHook(task: TaskView): TaskView['hook'] {
  return task.sidecar ? null : task.hook;
}

/** A poststart task that exited successfully: skipped (since NomadRules.poststartSuccessHealthy), else a failure. */
function succeededPoststart(task: TaskView, hook: TaskView['hook']): boolean {
  return hook === 'poststart' && task.state === 'dead' && !task.failed;
}

/**
 * tracker.go watchTaskEvents: poststop tasks are not evaluated; a poststart task that succeeded is
 * skipped; a failed task, or a finished one other than a prestart task, is fatal; any pending task
 * means not everything has started; otherwise the latest StartedAt opens the window. Nomad's tracker
 * starts that window when it first sees every task running, so a running task's start counts no
 * earlier than when watching began (`watchingSince`): an allocation re-watched for a new deployment
 * proves itself again. A completed task's window is tied to its finish, not to the watch.
 */
export function assessTasks(view: AllocationView, policy: HealthPolicy, watchingSince: number | null): TaskAssessment {
  let latestStart = Number.NEGATIVE_INFINITY;
  let allStarted = true;
  let someRunning = false;
  for (const name in view.tasks) {
    const task = view.tasks[name] as TaskView;
    const hook = ephemeralHook(task);
    if (hook === 'poststop') continue;
    if (policy.rules.poststartSuccessHealthy && succeededPoststart(task, hook)) continue;
    if (policy.completedTasksAreHealthy && task.state === 'dead' && !task.failed && task.finishedAt !== null) {
      // Its window closes at its finish at the latest: count it as started early enough for that.
      const provenFrom = task.finishedAt - policy.minHealthyTimeMs;
      const start = task.startedAt === null ? provenFrom : Math.min(task.startedAt, provenFrom);
      if (start > latestStart) latestStart = start;
      continue;
    }
    if (task.failed || (task.finishedAt !== null && hook !== 'prestart')) {
      return { kind: 'failed', at: task.finishedAt };
    }
    if (task.state === 'running') someRunning = true;
    // A running task without a StartedAt has not started as far as the data tells.
    if (task.state === 'pending' || task.startedAt === null) allStarted = false;
    else latestStart = Math.max(latestStart, task.startedAt, watchingSince ?? Number.NEGATIVE_INFINITY);
  }
  if (!allStarted || latestStart === Number.NEGATIVE_INFINITY) return { kind: 'starting', someRunning };
  return { kind: 'started', latestStart };
}

/** Whether the checks matter at all: health_check = "checks" and the group declares some. */
export function checksRequired(policy: HealthPolicy): boolean {
  return policy.useChecks && policy.expectedChecks.length > 0;
}

function countByName(checks: readonly { readonly name: string; readonly comparedAs?: string | undefined }[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const check of checks) {
    const name = check.comparedAs ?? check.name;
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return counts;
}

function tolerated(policy: HealthPolicy, check: CheckView): boolean {
  if (check.status === 'passing') return true;
  const onUpdate = policy.expectedChecks.find((e) => e.task === check.task && e.name === check.name)?.onUpdate;
  if (onUpdate === 'ignore') return true;
  return check.status === 'warning' && onUpdate === 'ignore_warnings';
}

/**
 * tracker.go evaluateConsulChecks: every expected check registered (names counted, since they need
 * not be unique; NomadRules.missingChecksFail) and none failing, where on_update ignore_warnings
 * tolerates a warning and ignore tolerates anything; a Connect sidecar's checks, not in the job
 * spec, must simply not fail (NomadRules.sidecarChecksBlock).
 */
export function checksPassing(policy: HealthPolicy, checks: readonly CheckView[]): boolean {
  const { rules } = policy;
  // Most groups expect no check: then this runs on every event, and needs no counting.
  if (policy.expectedChecks.length === 0 && checks.length === 0) return true;
  let sidecars = 0;
  for (const check of checks) {
    if (check.sidecar !== true) continue;
    sidecars++;
    if (rules.sidecarChecksBlock && check.status !== 'passing') return false;
  }
  const registered = sidecars === 0 ? checks : checks.filter((check) => check.sidecar !== true);
  // Before, Nomad looked only at what Consul had registered; nothing registered at all is taken as
  // no answer from Consul yet (which Nomad never counted as passing).
  if (registered.length === 0) return policy.expectedChecks.length === 0;
  if (rules.missingChecksFail) {
    const expected = countByName(policy.expectedChecks);
    const counted = countByName(registered);
    if (expected.size !== counted.size) return false;
    for (const [name, count] of expected) if (counted.get(name) !== count) return false;
  }
  return registered.every((check) => tolerated(policy, check));
}

/**
 * tracker.go: the tasks are healthy min_healthy_time after the latest start; the check watcher's
 * timer fires min_healthy_time after the checks began passing, and again every min_healthy_time
 * while the tasks are not healthy yet (it re-arms; a task restart does not reset it). Healthy at
 * the first firing with the tasks healthy.
 */
function firstFiringFrom(since: number, period: number, notBefore: number): number {
  const first = since + period;
  if (first >= notBefore || period <= 0) return Math.max(first, notBefore);
  return since + Math.ceil((notBefore - since) / period) * period;
}

/** When the allocation becomes healthy if nothing changes, or null when something is still missing. */
export function healthyAt(context: AllocationHealthContext): number | null {
  if (context.tasks.kind !== 'started') return null;
  const tasksAt = context.tasks.latestStart + context.policy.minHealthyTimeMs;
  if (!checksRequired(context.policy)) return tasksAt;
  if (context.checksPassingSince === null) return null;
  return firstFiringFrom(context.checksPassingSince, context.policy.minHealthyTimeMs, tasksAt);
}

/** The client is not heard from (ClientStatus unknown): nothing that time alone would decide can be said. */
export function disconnected(context: Pick<AllocationHealthContext, 'view'>): boolean {
  return context.view.clientStatus === 'unknown';
}

/**
 * The next moment the machine must be woken (an `observe` carrying only the time): when it becomes
 * healthy if nothing changes, else its deadline. Null once it has decided, and while its client is
 * disconnected (its own tracker goes on, and will report what it saw).
 */
export function wakeAt(context: AllocationHealthContext): number | null {
  if (context.outcome !== null || disconnected(context)) return null;
  const healthy = healthyAt(context);
  return healthy === null ? context.deadlineAt : Math.min(healthy, context.deadlineAt);
}

/** `value` with at most `digits` decimals and no trailing zeros, as Go prints a duration's fraction. */
function decimal(value: number, digits: number): string {
  return String(Number(value.toFixed(digits)));
}

/**
 * Go's time.Duration.String for a non-negative duration of at least 1 ms (or 0), in milliseconds
 * with fractions kept to the nanosecond: "500ms", "2s", "1m30s", "5m0s", "1h0m0s".
 */
export function formatGoDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${decimal(ms, 6)}ms`;
  const hours = Math.floor(ms / 3_600_000);
  const minutes = Math.floor((ms % 3_600_000) / 60_000);
  const seconds = decimal((ms % 60_000) / 1000, 9);
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}

/**
 * The task's state at `at`, as far as the view tells: a task that first started after `at` was
 * still pending then (seen by a supervisor that started judging after the deadline).
 */
function stateAt(task: TaskView, at: number): TaskView['state'] {
  return task.restarts === 0 && task.startedAt !== null && task.startedAt > at ? 'pending' : task.state;
}

/** tracker.go taskHealthState.event, about the task's own state at `at`, in the words of the release (NomadRules.healthyDeadlineWording). */
function taskStateReason(task: TaskView, context: AllocationHealthContext, at: number): string | null {
  const { policy } = context;
  const byDeadline = policy.rules.healthyDeadlineWording ? `by healthy_deadline of ${formatGoDuration(policy.healthyDeadlineMs)}` : 'by deadline';
  if (task.failed) return 'Unhealthy because of failed task';
  switch (stateAt(task, at)) {
    case 'pending':
      return `Task not running ${byDeadline}`;
    case 'dead':
      if (ephemeralHook(task) === null) return 'Unhealthy because of dead task';
      // Nomad explains no lifecycle task, even the poststart whose successful exit failed the
      // allocation before NomadRules.poststartSuccessHealthy: Warden names it.
      return !policy.rules.poststartSuccessHealthy && succeededPoststart(task, ephemeralHook(task)) ? 'Unhealthy because of dead task' : null;
    case 'running':
      // Nomad compares against the tracker context's deadline, which is never set (so it always
      // fires); we compare against the real one.
      return task.startedAt === null || Math.max(task.startedAt, context.watchingSince ?? task.startedAt) + policy.minHealthyTimeMs > context.deadlineAt
        ? `Task not running for min_healthy_time of ${formatGoDuration(policy.minHealthyTimeMs)} ${byDeadline}`
        : null;
  }
}

/** tracker.go taskHealthState.event, about the task's service checks (a sidecar's are not its own). */
function taskChecksReason(taskName: string, context: AllocationHealthContext): string | null {
  if (!checksRequired(context.policy)) return null;
  const desired = context.policy.expectedChecks.filter((check) => check.task === taskName).length;
  const registered = context.checks.filter((check) => check.task === taskName && check.sidecar !== true);
  if (registered.length === 0) return desired > 0 ? 'Service checks not registered' : null;
  const notPassing: string[] = [];
  for (const check of registered) {
    if (check.status !== 'passing' && !notPassing.includes(check.service)) notPassing.push(check.service);
  }
  if (notPassing.length > 0) return `Services not healthy by deadline: ${notPassing.join(', ')}`;
  if (registered.length !== desired) {
    return `Only ${registered.length} out of ${desired} checks registered and passing`;
  }
  return null;
}

/**
 * tracker.go TaskEvents: one explanation per task that kept the allocation from being healthy at
 * `at`, every task of the group included (a pending sibling of a failed task, a poststop task that
 * has not run). health_hook.go asks for them only in a deployment: a migration's verdict has none.
 */
export function explainUnhealthy(context: AllocationHealthContext, at: number): Record<string, string> {
  const reasons: Record<string, string> = {};
  if (context.policy.source === 'migrate') return reasons;
  for (const name in context.view.tasks) {
    const task = context.view.tasks[name] as TaskView;
    const reason = taskStateReason(task, context, at) ?? taskChecksReason(name, context);
    if (reason !== null) reasons[name] = reason;
  }
  return reasons;
}
