/**
 * An allocation's history as the registry takes it: where judging starts the first time it is seen
 * (when Nomad began watching, or the in-place update that made it watch again), and what happened
 * since the last view fed on every later sight.
 */
import type { AllocationView, HealthPolicy, HealthUndetermined } from '../../machines/allocationHealthTypes.js';
import { checksRequired } from '../../machines/allocationHealthRules.js';
import type { Allocation, TaskGroup } from '../nomad/types.js';
import { allocationHistory, TASK_EVENTS_KEPT, viewAt, type Undetermined } from './allocationHistory.js';
import { lifecycleOf } from './allocationView.js';
import { nomadDecision, nomadReasons, type NomadRecordedVerdict } from './nomadDecision.js';
import { isNanoTime, nanoTimeMs, parseNomadTime } from './nomadTime.js';
import type { HealthHistory, HealthRegistry, HealthStart } from './registry.js';

/** What Nomad's client sees before it reports anything: nothing runs. */
const UNSEEN: AllocationView = { clientStatus: 'pending', desiredStatus: 'run', tasks: {} };

export interface Opening {
  readonly start: HealthStart;
  readonly history: HealthHistory;
  readonly problems: readonly string[];
}

export type OpeningResult =
  | ({ readonly kind: 'judge' } & Opening)
  /** Its client has not reported it: Nomad is not watching it yet. */
  | { readonly kind: 'unreported'; readonly problems: readonly string[] }
  /** The history it keeps cannot decide its verdict (and its client has recorded no decision). */
  | { readonly kind: 'undetermined'; readonly undetermined: Undetermined; readonly problems: readonly string[] }
  /** The history it keeps cannot decide its verdict; its client's recorded decision does. */
  | { readonly kind: 'recorded'; readonly outcome: NomadRecordedVerdict; readonly problems: readonly string[] };

/**
 * How far the copy in hand speaks for the allocation: its history's `asOf`, or later, up to the
 * decision its client recorded (the client synced it with its task states as they stood then).
 */
function knownUpTo(asOf: number | null, allocation: Allocation, since?: number): number | null {
  const decision = nomadDecision(allocation, since);
  return decision === undefined ? asOf : Math.max(asOf ?? decision.at, decision.at);
}

/**
 * The first sight of an allocation: judged from when Nomad began watching it. `rewatchedFrom`: an
 * in-place update moved it into its deployment at that time, and Nomad's client watched it again from
 * then (health_hook.go Update), so judging starts there with the tasks as they stood.
 */
export function openingHistory(allocation: Allocation, group: TaskGroup, policy: HealthPolicy, rewatchedFrom?: number): OpeningResult {
  // Placed and not reported yet (most first sights): no history to rebuild.
  if (rewatchedFrom === undefined && !reportedByClient(allocation)) return { kind: 'unreported', problems: lifecycleProblems(group) };
  const full = allocationHistory(allocation, group, {
    rules: policy.rules,
    minHealthyTimeMs: policy.minHealthyTimeMs,
    ...(rewatchedFrom === undefined ? {} : { judgedFrom: rewatchedFrom }),
  });
  const { problems } = full;
  // Nomad's recorded verdict, where it exists, is the history to judge from where the kept one
  // cannot decide: a healthy stretch may be lost, or (the "Received" events lost) when Nomad's deadline came.
  const decision = nomadDecision(allocation, rewatchedFrom);
  // The deadline matters only where no task's failure, kept, decided first.
  const startLost = rewatchedFrom === undefined && receivedLost(allocation) && !(decision && failedBy(allocation, decision.at));
  // Service checks keep no past: seen first after Nomad's client decided, how long they had passed (or
  // failed) cannot be told, and Nomad's decision is that history, unless a task's kept failure decided first.
  const checksPastUnknown = rewatchedFrom === undefined && decision !== undefined && checksRequired(policy) && !failedBy(allocation, decision.at);
  if (decision !== undefined && (full.undetermined !== undefined || startLost || checksPastUnknown)) {
    const outcome = { healthy: decision.healthy, at: decision.at, reasons: nomadReasons(allocation, decision, policy), basis: 'nomad' } as const;
    return { kind: 'recorded', outcome, problems };
  }
  if (full.undetermined !== undefined) return { kind: 'undetermined', undetermined: full.undetermined, problems };
  // Nomad's deadline in play and not yet reached by its client: its decision will tell when it came.
  if (startLost && decision === undefined && stillWatched(allocation, policy)) {
    const at = full.views[0]?.at ?? full.asOf;
    if (at !== null && at !== undefined) return { kind: 'undetermined', undetermined: { at, reason: receivedLostReason(at) }, problems };
  }
  const asOf = knownUpTo(full.asOf, allocation, rewatchedFrom);
  if (rewatchedFrom !== undefined) {
    const base = viewAt(full, rewatchedFrom, UNSEEN);
    const views = [{ at: rewatchedFrom, view: base }, ...full.views.filter((timed) => timed.at > rewatchedFrom)];
    const history = { views, asOf: asOf === null ? null : Math.max(asOf, rewatchedFrom), pendingStop: full.pendingStop };
    return { kind: 'judge', start: { at: rewatchedFrom, watchingSince: rewatchedFrom }, history, problems };
  }
  const first = full.views[0];
  if (first === undefined || asOf === null) return { kind: 'unreported', problems };
  const since = full.watchingSince ?? first.at;
  return {
    kind: 'judge',
    start: { at: Math.min(since, first.at), watchingSince: since },
    history: { views: full.views, asOf, pendingStop: full.pendingStop },
    problems,
  };
}

/**
 * Whether Nomad's cap of 10 events a task has taken every task's "Received" event: when Nomad began
 * watching (and so when its deadline comes) is gone from the history.
 */
function receivedLost(allocation: Allocation): boolean {
  let capped = false;
  for (const state of Object.values(allocation.TaskStates ?? {})) {
    if (!Array.isArray(state?.Events)) continue;
    if (state.Events.some((event) => event?.Type === 'Received')) return false;
    if (state.Events.length >= TASK_EVENTS_KEPT) capped = true;
  }
  return capped;
}

/** Nomad's client watches it for a deployment still (it will record a decision), and no task has failed for good. */
function stillWatched(allocation: Allocation, policy: HealthPolicy): boolean {
  const over = allocation.DesiredStatus !== 'run' || ['complete', 'failed', 'lost'].includes(allocation.ClientStatus ?? '');
  return policy.source === 'update' && Boolean(allocation.DeploymentID) && !over && !failedBy(allocation, Number.POSITIVE_INFINITY);
}

function receivedLostReason(at: number): string {
  return (
    `Nomad keeps only the last ${TASK_EVENTS_KEPT} events of a task, and the allocation's Received events are gone (the kept ones begin ` +
    `${new Date(at).toISOString()}): when its healthy_deadline comes cannot be told from its history`
  );
}

/** Whether a task's kept events (Nomad's last 10) all come after `at`: some after `at` may be gone. */
function eventsLostSince(allocation: Allocation, at: number): boolean {
  for (const state of Object.values(allocation.TaskStates ?? {})) {
    const events: unknown = state?.Events;
    if (!Array.isArray(events) || events.length < TASK_EVENTS_KEPT) continue;
    const first = (events[0] as { Time?: unknown } | undefined)?.Time;
    if (isNanoTime(first) && nanoTimeMs(first) > at) return true;
  }
  return false;
}

/** How close to Nomad's decision a task's failure counts as the one it decided on (the client syncs both together). */
const SAME_MOMENT_MS = 1_000;

/** Whether a task had failed for good by `at`, as its kept state says (its FinishedAt): the history decides that verdict itself. */
function failedBy(allocation: Allocation, at: number): boolean {
  for (const state of Object.values(allocation.TaskStates ?? {})) {
    if (state?.Failed !== true) continue;
    const finished = parseNomadTime(state.FinishedAt);
    if (finished.ok && finished.ms !== null && finished.ms <= at + SAME_MOMENT_MS) return true;
  }
  return false;
}

/** Whether the allocation's client has reported anything of it (a task state, or a status of its own). */
function reportedByClient(allocation: Allocation): boolean {
  for (const _ in allocation.TaskStates ?? {}) return true;
  return typeof allocation.ClientStatus === 'string' && allocation.ClientStatus !== 'pending';
}

/** What reading the group's tasks' lifecycles reports (an unknown hook), as a rebuilt history would. */
function lifecycleProblems(group: TaskGroup): string[] {
  const problems: string[] = [];
  for (const spec of Array.isArray(group.Tasks) ? group.Tasks : []) lifecycleOf(spec.Name, spec.Lifecycle, problems);
  return problems;
}

/** A later sight: what happened after `base`, the view last fed and its time, by `policy`'s release rules. */
export function followingHistory(
  allocation: Allocation,
  group: TaskGroup,
  base: { at: number; view: AllocationView },
  policy: Pick<HealthPolicy, 'rules'>,
): HealthHistory & { problems: readonly string[] } {
  const { views, asOf, pendingStop, problems } = allocationHistory(allocation, group, { base, rules: policy.rules });
  return { views, asOf: knownUpTo(asOf, allocation), pendingStop, problems };
}

export type Sight =
  /** Fed to its machine (started now, or going on); `newestEventAt`: the time of the newest event it brought. */
  | { readonly kind: 'judging'; readonly newestEventAt: number | null; readonly problems: readonly string[] }
  | { readonly kind: 'unreported'; readonly problems: readonly string[] }
  | { readonly kind: 'undetermined'; readonly outcome: HealthUndetermined; readonly problems: readonly string[] }
  /** Decided by its client's recorded verdict (its kept history cannot decide). */
  | { readonly kind: 'recorded'; readonly outcome: NomadRecordedVerdict; readonly problems: readonly string[] };

/**
 * One sight of `allocation` for `registry`: the first starts its machine from its history, a later
 * one feeds what happened since the last. Throws HealthInputError for a malformed policy or view.
 */
export function judgeSight(
  registry: HealthRegistry,
  allocation: Allocation,
  group: TaskGroup,
  policy: HealthPolicy,
  options: {
    readonly rewatchedFrom?: number;
    /** The key the registry knows the allocation by (default its ID): one string kept, whichever copy brought it. */
    readonly id?: string;
  } = {},
): Sight {
  const id = options.id ?? allocation.ID;
  let baseAt = 0;
  let recorded: NomadRecordedVerdict | undefined;
  const history = registry.observeSince(id, (base) => {
    baseAt = base.at;
    // Events since the view last fed are gone (Nomad's cap, while Warden was cut off or behind): what
    // happened in between cannot be rebuilt. Nomad's recorded verdict, where it exists, decides.
    const decision = nomadDecision(allocation);
    if (decision !== undefined && decision.at > base.at && eventsLostSince(allocation, base.at)) {
      recorded = { healthy: decision.healthy, at: decision.at, reasons: nomadReasons(allocation, decision, policy), basis: 'nomad' };
      return { views: [], asOf: null, problems: [] };
    }
    return followingHistory(allocation, group, base, policy);
  });
  if (recorded !== undefined) return { kind: 'recorded', outcome: recorded, problems: [] };
  if (history !== undefined) {
    return { kind: 'judging', newestEventAt: history.asOf !== null && history.asOf > baseAt ? history.asOf : null, problems: history.problems };
  }
  const opening = openingHistory(allocation, group, policy, options.rewatchedFrom);
  if (opening.kind === 'unreported' || opening.kind === 'recorded') return opening;
  if (opening.kind === 'undetermined') {
    const outcome = { undetermined: true, at: opening.undetermined.at, reason: opening.undetermined.reason } as const;
    return { kind: 'undetermined', outcome, problems: opening.problems };
  }
  registry.trackHistory(id, policy, opening.start, opening.history);
  return { kind: 'judging', newestEventAt: opening.history.asOf, problems: opening.problems };
}
