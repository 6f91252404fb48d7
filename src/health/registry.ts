/**
 * The health of many allocations at once: one stored machine snapshot per allocation, stepped with
 * pure transitions, and at most one timer per allocation on the shared Clock (armed at the
 * machine's `wakeAt`). Not spawned actors: a spawn costs O(siblings) and a default actor ~4.6 KiB,
 * both far too much at 100,000 allocations (see bench/health-machine.ts).
 */
import type { Clock, TimerHandle } from '../clock/index.js';
import type { AllocationHealthState } from '../../machines/allocationHealth.js';
import { wakeAt } from '../../machines/allocationHealthRules.js';
import { allocationViewProblem, checkViewsProblem, healthPolicyProblem } from '../../machines/allocationHealthInput.js';
import type {
  AllocationHealthEvent,
  AllocationView,
  CheckView,
  HealthOutcome,
  HealthPolicy,
} from '../../machines/allocationHealthTypes.js';
import type { ObservedAllocationView } from './allocationView.js';
import { HealthInputError } from './errors.js';
import { HealthInspection, inspectionCallback, type InspectionObserver } from './inspection.js';
import { MachineStepper, type AllocationHealthSnapshot } from './machineStepper.js';
import { sameAllocationView, sameChecks } from './viewEquality.js';

export type HealthChange =
  | {
      readonly type: 'transition';
      readonly allocationId: string;
      readonly from: AllocationHealthState;
      readonly to: AllocationHealthState;
      /** Clock time of the step that moved it. */
      readonly at: number;
    }
  | { readonly type: 'outcome'; readonly allocationId: string; readonly outcome: HealthOutcome };

export type HealthListener = (change: HealthChange) => void;

export interface HealthRegistryOptions {
  readonly clock: Clock;
  /**
   * Receives, synchronously, what an actor of each allocation's machine would: `@xstate.actor` when
   * tracking starts, then `@xstate.event` and `@xstate.snapshot` for every step (see inspection.ts).
   */
  readonly inspect?: InspectionObserver;
}

export interface HealthStatus {
  readonly state: AllocationHealthState;
  readonly outcome: HealthOutcome | null;
  /** Why the last update was ignored, when it was malformed. */
  readonly rejected: string | null;
}

interface Entry {
  snapshot: AllocationHealthSnapshot;
  timer: TimerHandle | undefined;
  due: number | null;
}

export class HealthRegistry {
  private readonly clock: Clock;
  /** Only with an inspector: without one, no step pays for inspection. */
  private readonly inspection: HealthInspection | undefined;
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<HealthListener>();
  private readonly stepper = new MachineStepper();

  constructor(options: HealthRegistryOptions) {
    this.clock = options.clock;
    const emit = inspectionCallback(options.inspect);
    this.inspection = emit && new HealthInspection(emit, { snapshot: (id) => this.snapshot(id), receive: (id, event) => this.receive(id, event) });
  }

  get size(): number {
    return this.entries.size;
  }

  has(allocationId: string): boolean {
    return this.entries.has(allocationId);
  }

  /**
   * Starts judging an allocation. The healthy deadline counts from the view's `watchingSince` (when
   * Nomad began watching, from the allocation's data: see allocationView), else from now, and no
   * min_healthy_time window starts before it (an allocation re-watched for a new deployment); one in
   * the future or unusable is ignored, with the reason in the machine context (`watchingSinceIgnored`).
   * Tracking an id twice only updates its view. Throws HealthInputError when the policy or the view
   * is malformed.
   */
  track(allocationId: string, policy: HealthPolicy, view: ObservedAllocationView, checks: readonly CheckView[] = []): HealthStatus {
    if (this.entries.has(allocationId)) {
      this.updateAllocation(allocationId, view);
      return this.status(allocationId) as HealthStatus;
    }
    const problem = healthPolicyProblem(policy) ?? allocationViewProblem(view) ?? checkViewsProblem(checks);
    if (problem !== null) throw new HealthInputError(allocationId, problem);
    const now = this.clock.now();
    const input = { policy, now, watchingSince: view.watchingSince };
    const entry: Entry = { snapshot: this.stepper.initial(input), timer: undefined, due: null };
    this.entries.set(allocationId, entry);
    this.inspection?.started(allocationId, input, entry.snapshot);
    // The allocation as first seen is the machine's first observation.
    this.step(allocationId, entry, { type: 'observe', view, checks, now });
    return this.status(allocationId) as HealthStatus;
  }

  /** Feeds a new view; returns false when the allocation is unknown or the view changed nothing. */
  updateAllocation(allocationId: string, view: AllocationView): boolean {
    const entry = this.entries.get(allocationId);
    if (entry === undefined) return false;
    // A malformed view still goes to the machine, which records why it ignored it.
    if (allocationViewProblem(view) === null && sameAllocationView(entry.snapshot.context.view, view)) return false;
    this.step(allocationId, entry, { type: 'observe', view, now: this.clock.now() });
    return true;
  }

  /** Feeds the allocation's registered checks; returns false when unknown or unchanged. */
  updateChecks(allocationId: string, checks: readonly CheckView[]): boolean {
    const entry = this.entries.get(allocationId);
    if (entry === undefined) return false;
    if (checkViewsProblem(checks) === null && sameChecks(entry.snapshot.context.checks, checks)) return false;
    this.step(allocationId, entry, { type: 'observe', checks, now: this.clock.now() });
    return true;
  }

  /** Forgets an allocation and cancels its timer. */
  drop(allocationId: string): boolean {
    const entry = this.entries.get(allocationId);
    if (entry === undefined) return false;
    this.disarm(entry);
    this.inspection?.stopped(allocationId);
    return this.entries.delete(allocationId);
  }

  status(allocationId: string): HealthStatus | undefined {
    const context = this.entries.get(allocationId)?.snapshot;
    if (context === undefined) return undefined;
    return {
      state: context.value as AllocationHealthState,
      outcome: context.context.outcome,
      rejected: context.context.rejected,
    };
  }

  /** The machine snapshot itself (for the inspector, or to persist with `getPersistedSnapshot`). */
  snapshot(allocationId: string): AllocationHealthSnapshot | undefined {
    return this.entries.get(allocationId)?.snapshot;
  }

  subscribe(listener: HealthListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private step(allocationId: string, entry: Entry, event: AllocationHealthEvent): void {
    const before = entry.snapshot;
    if (before.status !== 'active') return;
    const after = this.stepper.step(before, event);
    entry.snapshot = after;
    this.inspection?.stepped(allocationId, event, after);
    const from = before.value as AllocationHealthState;
    const to = after.value as AllocationHealthState;
    if (from !== to) this.emit({ type: 'transition', allocationId, from, to, at: event.now });
    this.settle(allocationId, entry);
  }

  /** Announces an outcome, or (re-)arms the one timer at the machine's next wake-up. */
  private settle(allocationId: string, entry: Entry): void {
    const { context, status } = entry.snapshot;
    if (status === 'done') {
      this.disarm(entry);
      this.emit({ type: 'outcome', allocationId, outcome: context.outcome as HealthOutcome });
      return;
    }
    const due = wakeAt(context);
    if (due === entry.due) return;
    this.disarm(entry);
    if (due === null) return;
    entry.due = due;
    entry.timer = this.clock.setTimeout(() => {
      entry.timer = undefined;
      entry.due = null;
      // A dropped allocation's timer was cancelled; a re-tracked id has a different entry.
      if (this.entries.get(allocationId) === entry) this.step(allocationId, entry, { type: 'observe', now: this.clock.now() });
    }, Math.max(0, due - this.clock.now()));
  }

  private disarm(entry: Entry): void {
    if (entry.timer !== undefined) this.clock.clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.due = null;
  }

  private emit(change: HealthChange): void {
    for (const listener of this.listeners) listener(change);
  }

  /** An event sent through an inspected actor ref goes through the same filters as the API. */
  private receive(allocationId: string, event: AllocationHealthEvent): void {
    if (event.view !== undefined) this.updateAllocation(allocationId, event.view);
    if (event.checks !== undefined) this.updateChecks(allocationId, event.checks);
  }
}
