/**
 * An allocation's timeline, as Stately's inspector lists an actor's events: one entry per step of
 * its health machine (read from inspection events), saying what arrived, what it changed in words,
 * and the state after it. Kept to the latest `limit` entries.
 */
import type { AnyEventObject } from 'xstate';
import type { AllocationHealthState } from '../../machines/allocationHealth.js';
import { formatGoDuration } from '../../machines/allocationHealthRules.js';
import type { AllocationHealthContext, AllocationHealthEvent, CheckView, TaskView } from '../../machines/allocationHealthTypes.js';
import type { TimelineEntry, TimelineInfo } from './schema.js';
import { isoTime } from './time.js';

interface Seen {
  readonly state: AllocationHealthState;
  readonly context: AllocationHealthContext;
}

function taskWords(name: string, task: TaskView): string {
  const lifecycle = task.hook === null ? '' : ` (${task.hook}${task.sidecar ? ' sidecar' : ''})`;
  return `task ${name}${lifecycle}: ${task.state}${task.failed ? ', failed' : ''}${task.restarts > 0 ? `, ${task.restarts} restart${task.restarts === 1 ? '' : 's'}` : ''}`;
}

function taskChanges(name: string, before: TaskView | undefined, after: TaskView | undefined): string[] {
  if (after === undefined) return before === undefined ? [] : [`task ${name}: gone from the allocation`];
  if (before === undefined) return [taskWords(name, after)];
  const changes: string[] = [];
  if (after.restarts > before.restarts) changes.push(`task ${name} restarted (${after.restarts} restart${after.restarts === 1 ? '' : 's'})`);
  if (after.state !== before.state) changes.push(`task ${name}: ${before.state} → ${after.state}${after.failed ? ' (failed)' : ''}`);
  else if (after.failed && !before.failed) changes.push(`task ${name} failed`);
  else if (after.restarts === before.restarts && after.startedAt !== before.startedAt && after.startedAt !== null) changes.push(`task ${name} started again`);
  return changes;
}

const checkKey = (check: CheckView): string => `${check.task || 'group'}/${check.service}/${check.name}`;

function checkChanges(before: readonly CheckView[], after: readonly CheckView[]): string[] {
  const old = new Map(before.map((check) => [checkKey(check), check.status]));
  const now = new Map(after.map((check) => [checkKey(check), check.status]));
  const changes: string[] = [];
  for (const [key, status] of now) {
    const was = old.get(key);
    if (was === undefined) changes.push(`check ${key} registered: ${status}`);
    else if (was !== status) changes.push(`check ${key}: ${was} → ${status}`);
  }
  for (const key of old.keys()) if (!now.has(key)) changes.push(`check ${key} deregistered`);
  return changes;
}

function statusChanges(before: AllocationHealthContext, after: AllocationHealthContext): string[] {
  const changes: string[] = [];
  if (after.view.clientStatus !== before.view.clientStatus) changes.push(`client status: ${before.view.clientStatus} → ${after.view.clientStatus}`);
  if (after.view.desiredStatus !== before.view.desiredStatus) changes.push(`desired status: ${before.view.desiredStatus} → ${after.view.desiredStatus}`);
  const names = new Set([...Object.keys(before.view.tasks), ...Object.keys(after.view.tasks)]);
  for (const name of names) changes.push(...taskChanges(name, before.view.tasks[name], after.view.tasks[name]));
  return changes;
}

/** The allocation as first seen: its statuses, every task, every check. */
function firstSight(context: AllocationHealthContext): string[] {
  const { view, policy } = context;
  return [
    `client status ${view.clientStatus}, desired ${view.desiredStatus}`,
    ...Object.entries(view.tasks).map(([name, task]) => taskWords(name, task)),
    ...context.checks.map((check) => `check ${checkKey(check)}: ${check.status}`),
    `judged by ${policy.useChecks ? 'checks' : 'task states'}: min_healthy_time ${formatGoDuration(policy.minHealthyTimeMs)}, healthy_deadline ${formatGoDuration(policy.healthyDeadlineMs)}`,
  ];
}

/** A step with nothing new but the time: the timer the registry armed. */
function timerWords(after: Seen): string[] {
  const { policy, now, deadlineAt } = after.context;
  if (after.state === 'healthy') return [`min_healthy_time of ${formatGoDuration(policy.minHealthyTimeMs)} passed`];
  if (after.state === 'unhealthy' && now >= deadlineAt) return [`healthy_deadline of ${formatGoDuration(policy.healthyDeadlineMs)} passed`];
  return ['time passed'];
}

function isObserve(event: AnyEventObject): event is AllocationHealthEvent {
  return event.type === 'observe';
}

export class AllocationTimeline {
  private readonly entries: TimelineEntry[] = [];
  private seq = 0;
  private dropped = 0;
  /** The machine's state before the next step; undefined until (re)started, and once it has ended. */
  private previous: Seen | undefined;
  private firstStep = true;

  constructor(private readonly limit: number) {}

  /** One inspected step: `xstate.init` (the machine starts, or starts again) or an `observe`. */
  record(event: AnyEventObject, state: AllocationHealthState, context: AllocationHealthContext): void {
    const after = { state, context };
    if (!isObserve(event)) {
      this.previous = after;
      this.firstStep = true;
      return;
    }
    const before = this.previous;
    const cause: TimelineEntry['cause'] = this.firstStep || before === undefined ? 'tracked' : event.view ? 'allocation' : event.checks ? 'checks' : 'timer';
    const changes =
      cause === 'tracked' || before === undefined ? firstSight(context)
      : cause === 'timer' ? timerWords(after)
      : [...statusChanges(before.context, context), ...checkChanges(before.context.checks, context.checks)];
    if (context.rejected !== null) changes.push(`update ignored: ${context.rejected}`);
    const move = before !== undefined && before.state !== state ? { from: before.state, to: state } : null;
    this.push({ seq: ++this.seq, at: isoTime(event.now), cause, changes, state, move });
    this.firstStep = false;
    this.previous = after;
  }

  /** The machine ended: the last context is no longer needed to describe a next step. */
  settle(): void {
    this.previous = undefined;
  }

  info(allocationId: string): TimelineInfo {
    return { allocationId, entries: [...this.entries], dropped: this.dropped };
  }

  private push(entry: TimelineEntry): void {
    this.entries.push(entry);
    if (this.entries.length > this.limit) {
      this.entries.shift();
      this.dropped += 1;
    }
  }
}
