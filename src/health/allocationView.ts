/**
 * Nomad allocation → the compact view the health machine judges: client and desired status, and
 * per task of the group its state, failure, restarts, start and finish times and lifecycle.
 * Malformed parts never throw: each is reported as a problem and read in the safest way
 * (an unknown task is ignored, an unreadable time is unknown, an unknown state is pending).
 */
import type { AllocationView, TaskRunState, TaskView } from '../../machines/allocationHealthTypes.js';
import type { Allocation, TaskGroup, TaskState } from '../nomad/types.js';
import { parseNomadTime } from './nomadTime.js';

export interface AllocationViewResult {
  readonly view: AllocationView;
  /** What was ignored or guessed, and why. */
  readonly problems: readonly string[];
}

const RUN_STATES: ReadonlySet<unknown> = new Set<TaskRunState>(['pending', 'running', 'dead']);

function readTime(task: string, field: string, value: unknown, problems: string[]): number | null {
  const parsed = parseNomadTime(value);
  if (parsed.ok) return parsed.ms;
  problems.push(`task ${task}: ${field} ignored, ${parsed.problem}`);
  return null;
}

function taskView(name: string, lifecycle: TaskGroup['Tasks'][number]['Lifecycle'], state: TaskState | undefined, problems: string[]): TaskView {
  const hook = lifecycle?.Hook ?? null;
  const known = { hook: hook === 'prestart' || hook === 'poststart' || hook === 'poststop' ? hook : null, sidecar: lifecycle?.Sidecar === true };
  if (hook !== known.hook) problems.push(`task ${name}: unknown lifecycle hook ${JSON.stringify(hook)}, treated as a main task`);
  if (state === undefined || state === null) {
    return { state: 'pending', failed: false, restarts: 0, startedAt: null, finishedAt: null, ...known };
  }
  if (!RUN_STATES.has(state.State)) problems.push(`task ${name}: unknown state ${JSON.stringify(state.State)}, treated as pending`);
  return {
    state: RUN_STATES.has(state.State) ? state.State : 'pending',
    failed: state.Failed === true,
    restarts: typeof state.Restarts === 'number' ? state.Restarts : 0,
    startedAt: readTime(name, 'StartedAt', state.StartedAt, problems),
    finishedAt: readTime(name, 'FinishedAt', state.FinishedAt, problems),
    ...known,
  };
}

/**
 * The view of `allocation` for the health rules; `group` is its task group from the job version
 * the allocation runs. Every task of the group appears (one Nomad has not reported yet as pending).
 */
export function allocationView(allocation: Allocation, group: TaskGroup): AllocationViewResult {
  const problems: string[] = [];
  const states = allocation.TaskStates ?? {};
  const tasks: Record<string, TaskView> = {};
  for (const task of Array.isArray(group.Tasks) ? group.Tasks : []) {
    tasks[task.Name] = taskView(task.Name, task.Lifecycle, states[task.Name], problems);
  }
  for (const name of Object.keys(states)) {
    if (!(name in tasks)) problems.push(`task ${name} is not in group ${group.Name}, ignored`);
  }
  return {
    view: {
      clientStatus: typeof allocation.ClientStatus === 'string' ? allocation.ClientStatus : 'pending',
      desiredStatus: typeof allocation.DesiredStatus === 'string' ? allocation.DesiredStatus : 'run',
      tasks,
    },
    problems,
  };
}
