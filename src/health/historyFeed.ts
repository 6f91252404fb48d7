/**
 * An allocation's history as the registry takes it: where judging starts the first time it is seen
 * (when Nomad began watching, or the in-place update that made it watch again), and what happened
 * since the last view fed on every later sight.
 */
import type { AllocationView, HealthPolicy, HealthUndetermined } from '../../machines/allocationHealthTypes.js';
import type { Allocation, TaskGroup } from '../nomad/types.js';
import { allocationHistory, viewAt, type Undetermined } from './allocationHistory.js';
import { lifecycleOf } from './allocationView.js';
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
  /** The history it keeps cannot decide its verdict. */
  | { readonly kind: 'undetermined'; readonly undetermined: Undetermined; readonly problems: readonly string[] };

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
  if (full.undetermined !== undefined) return { kind: 'undetermined', undetermined: full.undetermined, problems };
  if (rewatchedFrom !== undefined) {
    const base = viewAt(full, rewatchedFrom, UNSEEN);
    const views = [{ at: rewatchedFrom, view: base }, ...full.views.filter((timed) => timed.at > rewatchedFrom)];
    const history = { views, asOf: full.asOf === null ? null : Math.max(full.asOf, rewatchedFrom), pendingStop: full.pendingStop };
    return { kind: 'judge', start: { at: rewatchedFrom, watchingSince: rewatchedFrom }, history, problems };
  }
  const first = full.views[0];
  if (first === undefined || full.asOf === null) return { kind: 'unreported', problems };
  const since = full.watchingSince ?? first.at;
  return {
    kind: 'judge',
    start: { at: Math.min(since, first.at), watchingSince: since },
    history: { views: full.views, asOf: full.asOf, pendingStop: full.pendingStop },
    problems,
  };
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
  return { views, asOf, pendingStop, problems };
}

export type Sight =
  /** Fed to its machine (started now, or going on); `newestEventAt`: the time of the newest event it brought. */
  | { readonly kind: 'judging'; readonly newestEventAt: number | null; readonly problems: readonly string[] }
  | { readonly kind: 'unreported'; readonly problems: readonly string[] }
  | { readonly kind: 'undetermined'; readonly outcome: HealthUndetermined; readonly problems: readonly string[] };

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
  const history = registry.observeSince(id, (base) => {
    baseAt = base.at;
    return followingHistory(allocation, group, base, policy);
  });
  if (history !== undefined) {
    return { kind: 'judging', newestEventAt: history.asOf !== null && history.asOf > baseAt ? history.asOf : null, problems: history.problems };
  }
  const opening = openingHistory(allocation, group, policy, options.rewatchedFrom);
  if (opening.kind === 'unreported') return opening;
  if (opening.kind === 'undetermined') {
    const outcome = { undetermined: true, at: opening.undetermined.at, reason: opening.undetermined.reason } as const;
    return { kind: 'undetermined', outcome, problems: opening.problems };
  }
  registry.trackHistory(id, policy, opening.start, opening.history);
  return { kind: 'judging', newestEventAt: opening.history.asOf, problems: opening.problems };
}
