/**
 * An allocation's history, as its own data tells it. Every task event carries its time, so the
 * views Nomad's client saw can be rebuilt from any later copy of the allocation: however it reaches
 * Warden (the event stream, a listing after a reconnect, a late start, a replay), the health machine
 * is fed the same views at the same times, and reaches the same verdict at the same time.
 *
 * How a task's state follows its events (client/allocrunner/taskrunner/task_runner.go):
 * `Started` → running from the event's time; `Restarting` → pending, one restart more; `Failed
 * Restoring Task` (its client restarted and lost the task) → pending; `Waiting for shutdown delay`
 * → pending (from Nomad 1.5: NomadRules.shutdownDelayPending); `Not Restarting` and `Killed` → dead;
 * any event with FailsTask → failed; every other event (`Reconnected` too) leaves the state as it was. A task's last death has no event of its own: the TaskState's FinishedAt times it.
 * Starts are always taken from the `Started` events (the TaskState's StartedAt is written a few
 * microseconds later, and only for the latest run), so every observer agrees to the microsecond.
 *
 * A desired stop counts from when the client acted on it (its `Killing` event, as Nomad's tracker
 * stops watching once the client has the stop), not from the server's write: until the client's
 * reaction is in the data, the stop is only pending, at the server's write.
 *
 * A client that stops heartbeating (Nomad 1.3+) leaves its allocations `unknown`: from when the
 * server marked it so (its AllocStates), the views say `unknown`, and the data speaks for that
 * time, no later. Once the client reports again, its own events tell what happened meanwhile.
 *
 * Nomad keeps the last 10 events per task. Seen for the first time with its oldest events gone, an
 * allocation may have been healthy in the part that is gone: the history says so (`undetermined`)
 * unless the allocation's creation time rules it out.
 */
import type { AllocationView, TaskView } from '../../machines/allocationHealthTypes.js';
import { NEWEST_NOMAD_RULES, type NomadRules } from '../../machines/nomadRules.js';
import type { Allocation, TaskGroup, TaskState } from '../nomad/types.js';
import { isNanoTime, nanoTimeMs, parseNanoTime, parseNomadTime } from './nomadTime.js';
import { estimatedWatchingSince, lifecycleOf, makeTask, taskView } from './allocationView.js';
import { sameAllocationView } from './viewEquality.js';

/** A view of the allocation as it stood from `at` on (epoch ms on the data's clock). */
export interface TimedView {
  readonly at: number;
  readonly view: AllocationView;
}

export interface AllocationHistory {
  /** Views after the base, oldest first, each different from the one before. */
  readonly views: readonly TimedView[];
  /**
   * The newest time the client's data speaks for (its latest event or task finish): whatever
   * happened to the allocation's tasks until then is in this copy. Null when its client has not
   * reported it yet.
   */
  readonly asOf: number | null;
  /** When Nomad's client began watching, as the data tells (see allocationView.ts). */
  readonly watchingSince: number | undefined;
  /** The server asked to stop the allocation, at this time, and its client has not acted on it yet. */
  readonly pendingStop: number | undefined;
  /** Since when its client has not been heard from (the server marked it `unknown`), if it has not come back. */
  readonly disconnectedAt: number | undefined;
  /** Set when the history the data keeps cannot decide the verdict (first sight only). */
  readonly undetermined: Undetermined | undefined;
  /** What was ignored or guessed, and why. */
  readonly problems: readonly string[];
}

export interface Undetermined {
  /** Where the kept history begins. */
  readonly at: number;
  readonly reason: string;
}

/** Where a history picks up: the view the machine was last fed, and when. */
export interface HistoryBase {
  readonly at: number;
  readonly view: AllocationView;
}

export interface HistoryOptions {
  /** Rebuild only what happened after this view (a machine that has been fed up to it). */
  readonly base?: HistoryBase;
  /** The group's min_healthy_time: decides whether a lost part of a first-seen history matters. */
  readonly minHealthyTimeMs?: number;
  /** Judging starts here (an allocation watched again after an in-place update): nothing lost before matters. */
  readonly judgedFrom?: number;
  /** The rules of the cluster's Nomad release (default: today's). */
  readonly rules?: NomadRules;
}

/** Nomad's TaskState.Events capacity (client/allocrunner/taskrunner/state: appendTaskEvent). */
export const TASK_EVENTS_KEPT = 10;

const STOPPING: ReadonlySet<string> = new Set(['stop', 'evict']);
const CLIENT_TERMINAL: ReadonlySet<string> = new Set(['complete', 'failed', 'lost']);
/** Events a task runner emits before its first start: losing only these loses no run. */
const BEFORE_START: ReadonlySet<string> = new Set(['Received', 'Task Setup', 'Driver', 'Downloading Artifacts', 'Template', 'Started']);

/** Not a Nomad event: the task's death at its FinishedAt. */
const FINISHED = '(finished)';

interface TimedEvent {
  readonly type: string;
  readonly at: number;
  readonly failsTask: boolean;
}

/** One task's story: its state changes after the base, its final state, and when the data ends for it. */
interface TaskStory {
  readonly name: string;
  /** The task as it stood at the base. */
  readonly start: TaskView;
  /** Its events after the base in time order (its death at FinishedAt included), and the task after each. */
  readonly events: readonly TimedEvent[];
  readonly after: readonly TaskView[];
  readonly final: TaskView;
  readonly lastAt: number | null;
  /** The client's reaction to a stop: its last Killing not followed by a start. */
  readonly killedAt: number | null;
  /** While the views are merged: the story's next event, and the task as it stands before it. */
  cursor: number;
  current: TaskView;
}

const pendingTask = ({ hook, sidecar }: Pick<TaskView, 'hook' | 'sidecar'>): TaskView => makeTask('pending', false, 0, null, null, hook, sidecar);
const NO_EVENTS: readonly TimedEvent[] = [];
const NO_TASKS: TaskView[] = [];

const byTime = (a: TimedEvent, b: TimedEvent): number => a.at - b.at;

/** The task's events that happened after `after`, in time order. */
function timedEvents(name: string, state: TaskState | undefined, after: number, problems: string[]): TimedEvent[] {
  const raw: unknown = state?.Events;
  if (!Array.isArray(raw)) return [];
  const events: TimedEvent[] = [];
  let sorted = true;
  for (const event of raw as unknown[]) {
    const fields = typeof event === 'object' && event !== null ? (event as Record<string, unknown>) : undefined;
    const time = fields?.Time;
    if (!isNanoTime(time)) {
      const parsed = parseNanoTime(time);
      problems.push(`task ${name}: event ${JSON.stringify(fields?.Type)} ignored, ${parsed.ok ? 'it has no time' : parsed.problem}`);
      continue;
    }
    const at = nanoTimeMs(time);
    if (!(at > after)) continue;
    if (events.length > 0 && (events[events.length - 1] as TimedEvent).at > at) sorted = false;
    const type = (fields as Record<string, unknown>).Type;
    events.push({ type: typeof type === 'string' ? type : '', at, failsTask: (fields as Record<string, unknown>).FailsTask === true });
  }
  // Nomad appends in order; a sort (stable) keeps a hostile or merged list from going back in time.
  return sorted ? events : events.sort(byTime);
}

/** Applies one event to a task's state (task_runner.go: which events move TaskState.State). */
function afterEvent(task: TaskView, event: TimedEvent, rules: NomadRules): TaskView {
  const failed = task.failed || event.failsTask;
  const { restarts, startedAt, finishedAt, hook, sidecar } = task;
  switch (event.type) {
    case 'Started':
      return makeTask('running', failed, restarts, event.at, null, hook, sidecar);
    case 'Restarting':
      return makeTask('pending', failed, restarts + 1, startedAt, finishedAt, hook, sidecar);
    case 'Failed Restoring Task':
      return makeTask('pending', failed, restarts, startedAt, finishedAt, hook, sidecar);
    case 'Waiting for shutdown delay':
      return rules.shutdownDelayPending ? makeTask('pending', failed, restarts, startedAt, finishedAt, hook, sidecar) : task;
    case 'Not Restarting':
    case 'Killed':
      return makeTask('dead', failed, restarts, startedAt, finishedAt ?? event.at, hook, sidecar);
    case FINISHED:
      return makeTask('dead', failed, restarts, startedAt, event.at, hook, sidecar);
    default:
      return failed === task.failed ? task : makeTask(task.state, failed, restarts, startedAt, finishedAt, hook, sidecar);
  }
}

function taskStory(name: string, base: TaskView, state: TaskState | undefined, after: number, rules: NomadRules, problems: string[]): TaskStory {
  const finalView = state === undefined || state === null ? undefined : taskView(name, base, state, problems);
  const events = timedEvents(name, state, after, problems);
  // A task's last death has no event: its FinishedAt times it (a failure flagged by then).
  const finished = finalView?.state === 'dead' ? finalView.finishedAt : null;
  if (finished !== null && finished !== undefined && finished > after) {
    let i = events.length;
    while (i > 0 && (events[i - 1] as TimedEvent).at > finished) i--;
    events.splice(i, 0, { type: FINISHED, at: finished, failsTask: finalView?.failed === true });
  }
  // Restart counts are anchored on the final count, so a window that lost events still ends right.
  let restartsInWindow = 0;
  for (const event of events) if (event.type === 'Restarting') restartsInWindow++;
  const startRestarts = finalView === undefined ? base.restarts : Math.max(0, finalView.restarts - restartsInWindow);
  let task: TaskView = startRestarts === base.restarts ? base : makeTask(base.state, base.failed, startRestarts, base.startedAt, base.finishedAt, base.hook, base.sidecar);
  const tasks: TaskView[] = events.length === 0 ? NO_TASKS : [];
  let killedAt: number | null = null;
  for (const event of events) {
    task = afterEvent(task, event, rules);
    if (event.type === 'Killing' && killedAt === null) killedAt = event.at;
    if (event.type === 'Started') killedAt = null;
    tasks.push(task);
  }
  const lastAt = events.length === 0 ? null : (events[events.length - 1] as TimedEvent).at;
  return { name, start: base, events: events.length === 0 ? NO_EVENTS : events, after: tasks, final: finalState(task, finalView), lastAt, killedAt, cursor: 0, current: base };
}

/**
 * The task as the copy in hand has it: the TaskState's own, with its start from the events where
 * they tell it (a field more than a millisecond off belongs to a start whose event is gone); without
 * a TaskState, where the events left it.
 */
function finalState(task: TaskView, finalView: TaskView | undefined): TaskView {
  if (finalView === undefined) return task;
  const knownStart = task.startedAt;
  const fieldStart = finalView.startedAt;
  const startedAt = knownStart !== null && (fieldStart === null || Math.abs(fieldStart - knownStart) < 1) ? knownStart : fieldStart;
  const { state, failed, restarts, finishedAt, hook, sidecar } = finalView;
  return startedAt === fieldStart ? finalView : makeTask(state, failed, restarts, startedAt, finishedAt, hook, sidecar);
}

function storyOf(stories: readonly TaskStory[], name: string): TaskStory | undefined {
  for (const story of stories) if (story.name === name) return story;
  return undefined;
}

function allocationStatus(tasks: Readonly<Record<string, TaskView>>): string {
  for (const name in tasks) if ((tasks[name] as TaskView).state === 'running') return 'running';
  return 'pending';
}

/** The time of the server's latest write, when the copy in hand is that write (AllocModifyIndex = ModifyIndex). */
function serverWriteTime(allocation: Allocation): number | undefined {
  if (allocation.AllocModifyIndex === undefined || allocation.AllocModifyIndex !== allocation.ModifyIndex) return undefined;
  const parsed = parseNanoTime(allocation.ModifyTime);
  return parsed.ok && parsed.ms !== null ? parsed.ms : undefined;
}

/**
 * Whether task `story`'s lost events could have held a healthy stretch: it ran before its kept
 * events (restarts the kept events do not account for, or a first kept event that follows a start),
 * and long enough after the allocation was created.
 */
function lostRun(story: TaskStory, finalRestarts: number, createdAt: number | null, minHealthyTimeMs: number): number | null {
  let first: TimedEvent | undefined;
  let restartsKept = 0;
  for (const event of story.events) {
    if (event.type === FINISHED) continue;
    first ??= event;
    if (event.type === 'Restarting') restartsKept++;
  }
  if (first === undefined || first.type === 'Received') return null;
  const ranBefore = finalRestarts > restartsKept || !BEFORE_START.has(first.type);
  if (!ranBefore) return null;
  if (createdAt !== null && first.at - createdAt < minHealthyTimeMs) return null;
  return first.at;
}

function earlier(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

/** ClientStatus in AllocStates (nomad/structs AllocStateFieldClientStatus). */
const CLIENT_STATUS_FIELD = 0;

/**
 * Since when the allocation's client has been away (structs LastUnknown, when NeedsToReconnect):
 * the last run of `unknown` ClientStatus states, unless a state after it says the client came back
 * (a `lost` one does not). Only for a copy the server still has as `unknown` or `lost`; without
 * AllocStates, the server's write of an `unknown` copy.
 */
function disconnectedSince(allocation: Allocation, problems: string[]): number | undefined {
  const status = allocation.ClientStatus;
  if (status !== 'unknown' && status !== 'lost') return undefined;
  const states = Array.isArray(allocation.AllocStates) ? allocation.AllocStates : [];
  let since: number | undefined;
  for (let i = states.length - 1; i >= 0; i--) {
    const state = states[i];
    if (state?.Field !== CLIENT_STATUS_FIELD) continue;
    if (state.Value === 'unknown') {
      const time = parseNomadTime(state.Time);
      if (time.ok && time.ms !== null) since = time.ms;
      else problems.push(`AllocStates: an unknown ClientStatus without a usable time ignored${time.ok ? '' : `, ${time.problem}`}`);
    } else if (since !== undefined) break;
    else if (state.Value !== 'lost') return undefined;
  }
  if (since !== undefined || status !== 'unknown') return since;
  const written = parseNanoTime(allocation.ModifyTime);
  return written.ok && written.ms !== null ? written.ms : undefined;
}

/**
 * The next time a task's state may change after the stories' cursors (and `serverAt`, the server's
 * own change still ahead: a stop, a disconnect): the stories' events are each in time order
 * already. +Infinity when none is left.
 */
function nextStepTime(stories: readonly TaskStory[], serverAt: number | undefined): number {
  let at = serverAt ?? Number.POSITIVE_INFINITY;
  for (const story of stories) {
    const next = story.events[story.cursor];
    if (next !== undefined && next.at < at) at = next.at;
  }
  return at;
}

export function allocationHistory(allocation: Allocation, group: TaskGroup, options: HistoryOptions = {}): AllocationHistory {
  const problems: string[] = [];
  const { base } = options;
  const after = base?.at ?? Number.NEGATIVE_INFINITY;
  const states = allocation.TaskStates ?? {};
  const rules = options.rules ?? NEWEST_NOMAD_RULES;
  const stories: TaskStory[] = [];
  for (const spec of Array.isArray(group.Tasks) ? group.Tasks : []) {
    const from = base?.view.tasks[spec.Name] ?? pendingTask(lifecycleOf(spec.Name, spec.Lifecycle, problems));
    stories.push(taskStory(spec.Name, from, states[spec.Name], after, rules, problems));
  }
  let reportedTasks = false;
  for (const name in states) {
    reportedTasks = true;
    if (storyOf(stories, name) === undefined) problems.push(`task ${name} is not in group ${group.Name}, ignored`);
  }

  const clientStatus = typeof allocation.ClientStatus === 'string' ? allocation.ClientStatus : 'pending';
  const desiredStatus = typeof allocation.DesiredStatus === 'string' ? allocation.DesiredStatus : 'run';
  const reported = reportedTasks || clientStatus !== 'pending';
  let lastAt: number | null = null;
  for (const story of stories) if (story.lastAt !== null && (lastAt === null || story.lastAt > lastAt)) lastAt = story.lastAt;
  // The server's word that nothing came from the client until it marked it away speaks for that time too.
  const disconnectedAt = disconnectedSince(allocation, problems);
  const clientAsOf = lastAt ?? (reported ? (base?.at ?? null) : null);
  const asOf = disconnectedAt === undefined || (clientAsOf !== null && clientAsOf >= disconnectedAt) ? clientAsOf : Math.max(disconnectedAt, after);

  // When the stop took effect for the client; or, not yet acted on, when the server wrote it.
  let stopAt: number | undefined;
  let pendingStop: number | undefined;
  if (STOPPING.has(desiredStatus) && !STOPPING.has(base?.view.desiredStatus ?? 'run')) {
    let killedAt: number | undefined;
    for (const story of stories) if (story.killedAt !== null && (killedAt === undefined || story.killedAt < killedAt)) killedAt = story.killedAt;
    const written = serverWriteTime(allocation);
    if (killedAt !== undefined) stopAt = killedAt;
    else if (CLIENT_TERMINAL.has(clientStatus)) stopAt = Math.max(asOf ?? after, written ?? Number.NEGATIVE_INFINITY);
    else pendingStop = written ?? asOf ?? after;
  }

  // Merge the tasks' steps into allocation views, in time order (each view only if it differs from the one before).
  const views: TimedView[] = [];
  let previous: AllocationView | undefined = base?.view;
  // The last view built, unless a task has moved since: one built now would be the same (and the
  // same as `previous`, which it was pushed as or found equal to), so it is not built again.
  let built: AllocationView | undefined;
  // The server's own changes still ahead: the client marked away, the stop taking effect.
  let stopAhead = stopAt;
  let awayAhead = disconnectedAt !== undefined && disconnectedAt > after ? disconnectedAt : undefined;
  for (let at = nextStepTime(stories, earlier(stopAhead, awayAhead)); at !== Number.POSITIVE_INFINITY; at = nextStepTime(stories, earlier(stopAhead, awayAhead))) {
    if (stopAhead !== undefined && stopAhead <= at) stopAhead = undefined;
    if (awayAhead !== undefined && awayAhead <= at) awayAhead = undefined;
    let moved = false;
    for (const story of stories) {
      let index = story.cursor;
      while (index < story.events.length && (story.events[index] as TimedEvent).at <= at) {
        const task = story.after[index++] as TaskView;
        if (task !== story.current) moved = true;
        story.current = task;
      }
      story.cursor = index;
    }
    const desired = stopAt !== undefined && at >= stopAt ? desiredStatus : 'run';
    const away = disconnectedAt !== undefined && at >= disconnectedAt;
    if (!moved && built !== undefined && built.desiredStatus === desired && (built.clientStatus === 'unknown') === away) continue;
    const tasks: Record<string, TaskView> = {};
    for (const story of stories) tasks[story.name] = story.current;
    const view = { clientStatus: away ? 'unknown' : allocationStatus(tasks), desiredStatus: desired, tasks };
    built = view;
    if (previous !== undefined && sameAllocationView(previous, view)) continue;
    views.push({ at, view });
    previous = view;
  }
  // The copy in hand, as Nomad wrote it, from when its data ends.
  const finalAt = Math.max(asOf ?? after, stopAt ?? Number.NEGATIVE_INFINITY);
  if (reported && Number.isFinite(finalAt)) {
    const tasks: Record<string, TaskView> = {};
    for (const story of stories) tasks[story.name] = story.final;
    const view = { clientStatus, desiredStatus: pendingStop === undefined ? desiredStatus : (previous?.desiredStatus ?? 'run'), tasks };
    if (previous === undefined || !sameAllocationView(previous, view)) {
      // Two views of one instant (a task's finish and the copy's own fields): the later says it all.
      // (Step times are distinct: only the copy's own view can share one.)
      if (views.length > 0 && (views[views.length - 1] as TimedView).at === finalAt) views.pop();
      views.push({ at: finalAt, view });
    }
  }

  const watchingSince = base === undefined ? estimatedWatchingSince(allocation, problems) : undefined;
  let undetermined: Undetermined | undefined;
  if (base === undefined && options.minHealthyTimeMs !== undefined) {
    const created = parseNanoTime(allocation.CreateTime);
    const createdAt = Math.max(created.ok ? (created.ms ?? Number.NEGATIVE_INFINITY) : Number.NEGATIVE_INFINITY, options.judgedFrom ?? Number.NEGATIVE_INFINITY);
    for (const story of stories) {
      const lostFrom = lostRun(story, story.final.restarts, Number.isFinite(createdAt) ? createdAt : null, options.minHealthyTimeMs);
      if (lostFrom === null || (undetermined !== undefined && undetermined.at >= lostFrom)) continue;
      undetermined = {
        at: lostFrom,
        reason:
          `Nomad keeps only the last ${TASK_EVENTS_KEPT} events of a task, and task ${story.name}'s events before ` +
          `${new Date(lostFrom).toISOString()} are gone: whether the allocation was healthy before then cannot be told from its history`,
      };
    }
  }
  return { views, asOf, watchingSince, pendingStop, disconnectedAt, undetermined, problems };
}

/** The view at `at`: the last of `history`'s views from then or before, else `before`. */
export function viewAt(history: Pick<AllocationHistory, 'views'>, at: number, before: AllocationView): AllocationView {
  let view = before;
  for (const timed of history.views) {
    if (timed.at > at) break;
    view = timed.view;
  }
  return view;
}
