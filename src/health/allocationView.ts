/**
 * Nomad allocation → the compact view the health machine judges: client and desired status, and
 * per task of the group its state, failure, restarts, start and finish times and lifecycle; plus
 * when Nomad's client began watching it (again, after an in-place update into a new deployment).
 * Malformed parts never throw: each is reported as a problem and read in the safest way
 * (an unknown task is ignored, an unreadable time is unknown, an unknown state is pending).
 */
import { TASK_RUN_STATES } from '../../machines/allocationHealthInput.js';
import type { AllocationView, TaskView } from '../../machines/allocationHealthTypes.js';
import type { Allocation, TaskGroup, TaskState } from '../nomad/types.js';
import { isNanoTime, nanoTimeMs, parseNanoTime, parseNomadTime } from './nomadTime.js';

/**
 * The compact view, with the start of Nomad's watch: HealthRegistry.track counts the deadline from
 * it, and starts no min_healthy_time window before it.
 */
export interface ObservedAllocationView extends AllocationView {
  /** Epoch ms; absent when the data does not tell (the client has not reported the allocation yet). */
  readonly watchingSince?: number;
}

export interface AllocationViewResult {
  readonly view: ObservedAllocationView;
  /** What was ignored or guessed, and why. */
  readonly problems: readonly string[];
}

function readTime(task: string, field: string, value: unknown, problems: string[]): number | null {
  const parsed = parseNomadTime(value);
  if (parsed.ok) return parsed.ms;
  problems.push(`task ${task}: ${field} ignored, ${parsed.problem}`);
  return null;
}

/** A task's lifecycle as the health rules know it; an unknown hook is reported and read as a main task. */
export function lifecycleOf(name: string, lifecycle: TaskGroup['Tasks'][number]['Lifecycle'], problems: string[]): Pick<TaskView, 'hook' | 'sidecar'> {
  const hook = lifecycle?.Hook ?? null;
  const known = { hook: hook === 'prestart' || hook === 'poststart' || hook === 'poststop' ? hook : null, sidecar: lifecycle?.Sidecar === true };
  if (hook !== known.hook) problems.push(`task ${name}: unknown lifecycle hook ${JSON.stringify(hook)}, treated as a main task`);
  return known;
}

/**
 * A TaskView written as one literal of all its fields: every task view has the one compact shape
 * (spreads can leave fields outside the object, which costs heap in each allocation kept).
 */
export function makeTask(
  state: TaskView['state'],
  failed: boolean,
  restarts: number,
  startedAt: number | null,
  finishedAt: number | null,
  hook: TaskView['hook'],
  sidecar: boolean,
): TaskView {
  return { state, failed, restarts, startedAt, finishedAt, hook, sidecar };
}

/** A task's TaskState as the health rules see it (a task Nomad has not reported yet is pending). */
export function taskView(name: string, known: Pick<TaskView, 'hook' | 'sidecar'>, state: TaskState | undefined, problems: string[]): TaskView {
  if (state === undefined || state === null) return makeTask('pending', false, 0, null, null, known.hook, known.sidecar);
  if (!TASK_RUN_STATES.has(state.State)) problems.push(`task ${name}: unknown state ${JSON.stringify(state.State)}, treated as pending`);
  return makeTask(
    TASK_RUN_STATES.has(state.State) ? state.State : 'pending',
    state.Failed === true,
    typeof state.Restarts === 'number' ? state.Restarts : 0,
    readTime(name, 'StartedAt', state.StartedAt, problems),
    readTime(name, 'FinishedAt', state.FinishedAt, problems),
    known.hook,
    known.sidecar,
  );
}

/**
 * When Nomad's client began watching: health_hook.go starts the deadline as the alloc runner starts,
 * right after the client received the allocation (2 ms after the "Received" event in the recordings).
 * Task events are capped at 10 per task, so "Received" can be gone: then the earliest event left,
 * else CreateTime once the client has reported the allocation at all. Before that, Nomad may not be
 * watching yet, so nothing is estimated and the deadline counts from the first sight.
 */
export function estimatedWatchingSince(allocation: Allocation, problems: string[]): number | undefined {
  const states = allocation.TaskStates ?? {};
  let received: number | undefined;
  let earliest: number | undefined;
  for (const name in states) {
    const events: unknown = states[name]?.Events;
    if (!Array.isArray(events)) continue;
    for (const event of events as unknown[]) {
      const { Type: type, Time: time } = typeof event === 'object' && event !== null ? (event as { Type?: unknown; Time?: unknown }) : {};
      if (!isNanoTime(time)) {
        const parsed = parseNanoTime(time);
        problems.push(`task ${name}: event ${JSON.stringify(type)} ignored, ${parsed.ok ? 'it has no time' : parsed.problem}`);
        continue;
      }
      const at = nanoTimeMs(time);
      if (type === 'Received' && (received === undefined || at < received)) received = at;
      if (earliest === undefined || at < earliest) earliest = at;
    }
  }
  const best = received ?? earliest;
  if (best !== undefined) return best;
  const reported = Object.keys(states).length > 0 || (allocation.ClientStatus ?? 'pending') !== 'pending';
  if (!reported) return undefined;
  const created = parseNanoTime(allocation.CreateTime);
  if (created.ok) return created.ms ?? undefined;
  problems.push(`CreateTime ignored, ${created.problem}`);
  return undefined;
}

/**
 * When Nomad's client began watching again after an update moved the allocation into another
 * deployment (health_hook.go Update: cleared health, a new deadline and tracker from then): the
 * ModifyTime of that update.
 */
function rewatchedSince(update: Pick<Allocation, 'ModifyTime'>, problems: string[]): number | undefined {
  const modified = parseNanoTime(update.ModifyTime);
  if (!modified.ok) problems.push(`ModifyTime ignored, ${modified.problem}`);
  return modified.ok ? (modified.ms ?? undefined) : undefined;
}

export interface AllocationViewOptions {
  /**
   * The update that moved the allocation into its current deployment (an in-place update, this
   * update or an earlier one): watching began again with it, not with the "Received" event.
   */
  readonly rewatchedBy?: Pick<Allocation, 'ModifyTime'>;
  /**
   * Estimate when Nomad began watching (default true). Only the view an allocation is first tracked
   * with needs it; later updates skip the scan of every task event.
   */
  readonly estimateWatchingSince?: boolean;
}

/**
 * The view of `allocation` for the health rules; `group` is its task group from the job version
 * the allocation runs. Every task of the group appears (one Nomad has not reported yet as pending).
 */
export function allocationView(allocation: Allocation, group: TaskGroup, options: AllocationViewOptions = {}): AllocationViewResult {
  const problems: string[] = [];
  const states = allocation.TaskStates ?? {};
  const tasks: Record<string, TaskView> = {};
  for (const task of Array.isArray(group.Tasks) ? group.Tasks : []) {
    tasks[task.Name] = taskView(task.Name, lifecycleOf(task.Name, task.Lifecycle, problems), states[task.Name], problems);
  }
  for (const name of Object.keys(states)) {
    if (!(name in tasks)) problems.push(`task ${name} is not in group ${group.Name}, ignored`);
  }
  const since =
    options.rewatchedBy !== undefined ? rewatchedSince(options.rewatchedBy, problems)
    : options.estimateWatchingSince === false ? undefined
    : estimatedWatchingSince(allocation, problems);
  return {
    view: {
      clientStatus: typeof allocation.ClientStatus === 'string' ? allocation.ClientStatus : 'pending',
      desiredStatus: typeof allocation.DesiredStatus === 'string' ? allocation.DesiredStatus : 'run',
      tasks,
      ...(since === undefined ? {} : { watchingSince: since }),
    },
    problems,
  };
}
