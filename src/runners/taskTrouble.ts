/**
 * Why a runner's allocation did not run, in Nomad's own words, from its tasks' events: the event
 * that says what went wrong (a driver failure, a failed validation, an exit), not only the one that
 * gave up ("Not Restarting: Error was unrecoverable"); the trouble of an allocation that is still
 * pending while its task restarts; and an OOM kill as the task runner reports it (a Terminated
 * event whose details say `oom_killed: "true"`, client/allocrunner/taskrunner/task_runner.go).
 */
import type { Allocation, TaskEvent, TaskState } from '../nomad/types.js';

/** The events that say what went wrong with a task. */
const TROUBLE = new Set(['Driver Failure', 'Failed Validation', 'Setup Failure', 'Failed Artifact Download', 'Task hook failed', 'Failed Restoring Task', 'Sibling Task Failed']);

function isTrouble(event: TaskEvent): boolean {
  if (event.Type === 'Terminated') return (event.ExitCode ?? 0) !== 0 || (event.Signal ?? 0) !== 0 || isOomEvent(event);
  return TROUBLE.has(event.Type);
}

function isOomEvent(event: TaskEvent): boolean {
  return event.Type === 'Terminated' && event.Details?.oom_killed === 'true';
}

/** One line: Nomad's multi-line messages (validation errors, placement metrics) joined. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function said(event: TaskEvent): string {
  const text = oneLine(event.DisplayMessage || event.Message || '');
  // The troubles are named ("Driver Failure: …"); the others' messages say what they are ("Exit Code: 1", "Task restarting in 16s").
  if (!TROUBLE.has(event.Type) || text === '') return text || event.Type;
  return text.startsWith(event.Type) ? text : `${event.Type}: ${text}`;
}

function sortedTasks(alloc: Pick<Allocation, 'TaskStates'>): [string, TaskState][] {
  return Object.entries(alloc.TaskStates ?? {}).sort(([a], [b]) => a.localeCompare(b));
}

/** The cause and the end of one failed task: `Failed Validation: … (Error was unrecoverable)`. */
function taskFailure(state: TaskState): string | undefined {
  const events = state.Events ?? [];
  const failing = events.findIndex((event) => event.FailsTask);
  const end = failing >= 0 ? failing : state.Failed ? events.length - 1 : -1;
  if (end < 0) return undefined;
  const cause = events.slice(0, end + 1).reverse().find(isTrouble);
  const last = events[end]!;
  if (cause === undefined || cause === last) return said(last);
  return `${said(cause)} (${said(last)})`;
}

/** What failed the allocation, in Nomad's words: each failed task's cause and its end. */
export function failureMessage(alloc: Allocation): string {
  const failures = sortedTasks(alloc).flatMap(([task, state]) => {
    const failure = taskFailure(state);
    return failure === undefined ? [] : [`${task}: ${failure}`];
  });
  return failures.length > 0 ? failures.join('; ') : oneLine(alloc.ClientDescription || 'allocation failed');
}

/**
 * What is wrong with an allocation that has not run yet: a task's latest trouble (a driver failure,
 * an exit) and, when it restarts, when. Undefined when nothing went wrong (yet).
 */
export function pendingTrouble(alloc: Pick<Allocation, 'TaskStates'>): string | undefined {
  for (const [task, state] of sortedTasks(alloc)) {
    if (state.State === 'running') continue;
    const events = state.Events ?? [];
    const at = events.findLastIndex(isTrouble);
    if (at < 0) continue;
    const restarting = events.slice(at + 1).find((event) => event.Type === 'Restarting');
    return `${task}: ${said(events[at]!)}${restarting ? `; ${said(restarting)}` : ''}`;
  }
  return undefined;
}

/** Whether the task's latest exit was an OOM kill (Poseidon's isOOMKilled reads the same detail). */
export function oomKilled(alloc: Pick<Allocation, 'TaskStates'>, task: string): boolean {
  const last = alloc.TaskStates?.[task]?.Events?.findLast((event) => event.Type === 'Terminated');
  return last !== undefined && isOomEvent(last);
}
