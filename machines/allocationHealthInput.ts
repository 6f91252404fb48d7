/**
 * Shape checks for what the health machine is fed. Events come from other code (and, through it,
 * from the network), so a malformed one must be recorded as rejected, never thrown out of a transition.
 * Each function returns why the value is unusable, or null when it is fine.
 */
import type { CheckOnUpdate, CheckStatus, TaskRunState } from './allocationHealthTypes.js';
import { nomadRulesProblem } from './nomadRules.js';

/** The values of TaskRunState, for whoever reads task states from outside (the adapters too). */
export const TASK_RUN_STATES: ReadonlySet<unknown> = new Set<TaskRunState>(['pending', 'running', 'dead']);
const HOOKS: ReadonlySet<unknown> = new Set([null, 'prestart', 'poststart', 'poststop']);
const CHECK_STATUSES: ReadonlySet<unknown> = new Set<CheckStatus>(['passing', 'warning', 'critical']);
/** The values of CheckOnUpdate (a check's on_update). */
export const CHECK_ON_UPDATES: ReadonlySet<unknown> = new Set<CheckOnUpdate>(['require_healthy', 'ignore_warnings', 'ignore']);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function isTimeOrNull(value: unknown): boolean {
  return value === null || isTime(value);
}

export function timeProblem(now: unknown): string | null {
  return isTime(now) ? null : `time ${String(now)} is not a finite number of milliseconds`;
}

/** Why `since` cannot be when watching began, judged at `now`: it must be a time, and not a future one. */
export function watchingSinceProblem(since: unknown, now: number): string | null {
  if (!isTime(since)) return `watchingSince ${String(since)} is not a finite number of milliseconds`;
  return since > now ? `watchingSince ${since} is after the time judging starts (${now})` : null;
}

function taskProblem(name: string, task: unknown): string | null {
  if (!isRecord(task)) return `task ${name}: not an object`;
  if (!TASK_RUN_STATES.has(task.state)) return `task ${name}: unknown state ${String(task.state)}`;
  if (typeof task.failed !== 'boolean') return `task ${name}: failed is not a boolean`;
  if (typeof task.restarts !== 'number') return `task ${name}: restarts is not a number`;
  if (!isTimeOrNull(task.startedAt)) return `task ${name}: startedAt is not a time`;
  if (!isTimeOrNull(task.finishedAt)) return `task ${name}: finishedAt is not a time`;
  if (!HOOKS.has(task.hook)) return `task ${name}: unknown lifecycle hook ${String(task.hook)}`;
  if (typeof task.sidecar !== 'boolean') return `task ${name}: sidecar is not a boolean`;
  return null;
}

export function allocationViewProblem(view: unknown): string | null {
  if (!isRecord(view)) return 'allocation view is not an object';
  if (typeof view.clientStatus !== 'string') return 'allocation view: clientStatus is not a string';
  if (typeof view.desiredStatus !== 'string') return 'allocation view: desiredStatus is not a string';
  if (!isRecord(view.tasks)) return 'allocation view: tasks is not an object';
  for (const name in view.tasks) {
    const problem = taskProblem(name, view.tasks[name]);
    if (problem !== null) return problem;
  }
  return null;
}

export function checkViewsProblem(checks: unknown): string | null {
  if (!Array.isArray(checks)) return 'checks is not an array';
  for (const check of checks as unknown[]) {
    if (!isRecord(check) || typeof check.task !== 'string' || typeof check.service !== 'string' || typeof check.name !== 'string') {
      return 'check without task, service and name strings';
    }
    if (!CHECK_STATUSES.has(check.status)) return `check ${check.name}: unknown status ${String(check.status)}`;
    if (check.sidecar !== undefined && typeof check.sidecar !== 'boolean') return `check ${check.name}: sidecar is not a boolean`;
  }
  return null;
}

export function healthPolicyProblem(policy: unknown): string | null {
  if (!isRecord(policy)) return 'health policy is not an object';
  for (const key of ['minHealthyTimeMs', 'healthyDeadlineMs'] as const) {
    const value = policy[key];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return `health policy: ${key} is not a duration`;
  }
  if (typeof policy.useChecks !== 'boolean') return 'health policy: useChecks is not a boolean';
  if (typeof policy.completedTasksAreHealthy !== 'boolean') return 'health policy: completedTasksAreHealthy is not a boolean';
  const lostAfter = policy.lostAfterMs;
  if (lostAfter !== null && (typeof lostAfter !== 'number' || !Number.isFinite(lostAfter) || lostAfter < 0)) return 'health policy: lostAfterMs is not a duration or null';
  const rules = nomadRulesProblem(policy.rules);
  if (rules !== null) return `health policy: ${rules}`;
  if (!Array.isArray(policy.expectedChecks)) return 'health policy: expectedChecks is not an array';
  for (const check of policy.expectedChecks as unknown[]) {
    if (!isRecord(check) || typeof check.name !== 'string' || !CHECK_ON_UPDATES.has(check.onUpdate)) {
      return 'health policy: an expected check has no name or an unknown on_update';
    }
    if (check.comparedAs !== undefined && typeof check.comparedAs !== 'string') return 'health policy: an expected check has a comparedAs that is not a string';
  }
  return null;
}
