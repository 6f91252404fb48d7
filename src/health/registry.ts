/**
 * The health of many allocations at once: one stored machine state per allocation, stepped by the
 * machine's own transitions (machineStepper.ts). Not spawned actors: a spawn costs O(siblings) and a default actor ~4.6 KiB, both
 * far too much at 100,000 allocations (see bench/health-machine.ts).
 *
 * Time is the data's: each allocation is fed its history (allocationHistory.ts), every view at the
 * time it held, and time only passes for a machine (its `wakeAt`: min_healthy_time served, deadline
 * passed) up to what its Horizon says is known, so a verdict never outruns data still on its way.
 * Updates that change nothing never reach the machine.
 */
import type { Clock } from '../clock/index.js';
import type { AllocationHealthState } from '../../machines/allocationHealth.js';
import { disconnected, wakeAt } from '../../machines/allocationHealthRules.js';
import { allocationViewProblem, checkViewsProblem, healthPolicyProblem } from '../../machines/allocationHealthInput.js';
import type {
  AllocationHealthContext,
  AllocationHealthEvent,
  AllocationView,
  CheckView,
  HealthOutcome,
  HealthPolicy,
} from '../../machines/allocationHealthTypes.js';
import type { ObservedAllocationView } from './allocationView.js';
import type { TimedView } from './allocationHistory.js';
import { ClockHorizon, NOT_WAITING, type Horizon, type HorizonWaiter } from './horizon.js';
import { HealthInputError } from './errors.js';
import { HealthInspection, inspectionCallback, type InspectionObserver } from './inspection.js';
import { MachineStepper, type AllocationHealthSnapshot, type HealthMachineState, type MutableStepperState } from './machineStepper.js';
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
  /** Up to when each allocation's data is known (default: up to the clock's now, a ClockHorizon). */
  readonly horizon?: Horizon;
  /**
   * Where each allocation's machine is kept (default: a Map of the registry's own). A caller with a
   * record of its own for each allocation keeps the machine on it: one table for both.
   */
  readonly machines?: MachineTable;
}

/** A table of the registry's machines by allocation ID: what a Map does, and all the registry asks of one. */
export interface MachineTable {
  get(allocationId: string): MachineEntry | undefined;
  has(allocationId: string): boolean;
  set(allocationId: string, entry: MachineEntry): void;
  delete(allocationId: string): boolean;
  readonly size: number;
}

export interface HealthStatus {
  readonly state: AllocationHealthState;
  readonly outcome: HealthOutcome | null;
  /** Why the last update was ignored, when it was malformed. */
  readonly rejected: string | null;
}

/** What the registry is fed for an allocation: its views over time, as allocationHistory gives them. */
export interface HealthHistory {
  readonly views: readonly TimedView[];
  /** Its client's data speaks for everything up to this time (null: nothing reported yet). */
  readonly asOf: number | null;
  /** A stop the server wrote at this time and the client has not acted on yet: it counts once known to be the latest word. */
  readonly pendingStop?: number | undefined;
}

/** Where judging starts: when Nomad began watching the allocation, as far as the data tells. */
export interface HealthStart {
  /** Data time judging starts at. */
  readonly at: number;
  /** When Nomad began watching (may be before `at`); absent: from `at`. */
  readonly watchingSince?: number | undefined;
}

/**
 * tracker.go consulCheckLookupInterval: Nomad's client looks at an allocation's Consul checks every
 * 500 ms from when it began watching it, so a check counts from the first look that sees it.
 */
export const CHECK_LOOKUP_INTERVAL_MS = 500;

export interface CheckUpdateOptions {
  /** The checks are a state Nomad's client samples every CHECK_LOOKUP_INTERVAL_MS (Consul's): see updateChecks. */
  readonly sampled?: boolean;
  /** Clock time they were seen (the answer's arrival), when before now: a live run and its replay then agree. */
  readonly seenAt?: number;
}

/** Something to feed at a time not yet known to be past: checks seen then, or a pending stop. */
interface Queued {
  readonly at: number;
  readonly checks?: readonly CheckView[];
  readonly stop?: true;
}

/**
 * An allocation's machine (where it is, its context: stepped in place) and what the registry knows of
 * its data. The registry's own: a MachineTable only keeps it.
 */
export interface MachineEntry extends MutableStepperState<AllocationHealthState, AllocationHealthContext>, HorizonWaiter {
  /** The data of the allocation speaks for everything up to this time. */
  known: number;
  queue: Queued[] | undefined;
  /** A view has been fed: time passing means something from then on. */
  fed: boolean;
  /** Data time of the latest view fed (what a later history picks up from). */
  viewAt: number;
}

export class HealthRegistry {
  private readonly clock: Clock;
  /** Only with an inspector: without one, no step pays for inspection. */
  private readonly inspection: HealthInspection | undefined;
  private readonly horizon: Horizon;
  private readonly entries: MachineTable;
  private readonly listeners = new Set<HealthListener>();
  private readonly stepper = new MachineStepper();
  /**
   * Policies found well-formed: a job version's group hands every allocation of it the same policy
   * object, checked once instead of once per allocation (policies are read-only).
   */
  private readonly validPolicies = new WeakSet<HealthPolicy>();
  /** XState's snapshot of an allocation's machine, once asked for (an inspector, a caller persisting it), until its next step. */
  private readonly snapshots = new Map<string, AllocationHealthSnapshot>();

  constructor(options: HealthRegistryOptions) {
    this.clock = options.clock;
    this.entries = options.machines ?? new Map<string, MachineEntry>();
    const emit = inspectionCallback(options.inspect);
    this.inspection = emit && new HealthInspection(emit, { snapshot: (id) => this.snapshot(id), receive: (id, event) => this.receive(id, event) });
    this.horizon = options.horizon ?? new ClockHorizon(options.clock);
    this.horizon.connect((waiters) => {
      // One dropped meanwhile (by a listener of an earlier one's step) is no longer judged.
      for (const waiter of waiters) {
        const entry = this.entries.get(waiter.allocationId);
        if (entry === waiter) this.advance(entry.allocationId, entry);
      }
    });
  }

  get size(): number {
    return this.entries.size;
  }

  has(allocationId: string): boolean {
    return this.entries.has(allocationId);
  }

  /**
   * Starts judging an allocation seen now, as it stands now. The healthy deadline counts from the
   * view's `watchingSince` (when Nomad began watching, from the allocation's data: see
   * allocationView), else from now, and no min_healthy_time window starts before it; one in the future
   * or unusable is ignored, with the reason in the machine context (`watchingSinceIgnored`). Tracking
   * an id twice only updates its view. Throws HealthInputError when the policy or the view is malformed.
   */
  track(allocationId: string, policy: HealthPolicy, view: ObservedAllocationView, checks: readonly CheckView[] = []): HealthStatus {
    if (this.entries.has(allocationId)) {
      this.updateAllocation(allocationId, view);
      return this.status(allocationId) as HealthStatus;
    }
    const now = this.clock.now();
    return this.trackHistory(allocationId, policy, { at: now, watchingSince: view.watchingSince }, { views: [{ at: now, view }], asOf: now }, checks);
  }

  /**
   * Starts judging an allocation from `start` and feeds it `history`: as if it had been watched
   * since, whenever it is first seen. Throws HealthInputError when the policy or a view is malformed.
   */
  trackHistory(allocationId: string, policy: HealthPolicy, start: HealthStart, history: HealthHistory, checks: readonly CheckView[] = []): HealthStatus {
    const problem =
      this.policyProblem(policy) ?? history.views.reduce<string | null>((found, timed) => found ?? allocationViewProblem(timed.view), null) ?? checkViewsProblem(checks);
    if (problem !== null) throw new HealthInputError(allocationId, problem);
    this.drop(allocationId);
    const input = { policy, now: start.at, watchingSince: start.watchingSince };
    const { value, context } = this.stepper.initial(input);
    const entry: MachineEntry = {
      allocationId, value, context, status: 'active', output: undefined, known: start.at, queue: undefined, fed: false, viewAt: start.at,
      // Written out, not spread from NOT_WAITING: a literal's own fields are kept in the object, a spread's beside it (40 B more each).
      horizonDue: NOT_WAITING.horizonDue, horizonSeq: NOT_WAITING.horizonSeq, horizonSlot: NOT_WAITING.horizonSlot,
    };
    this.entries.set(allocationId, entry);
    this.inspection?.started(allocationId, input, this.snapshotOf(allocationId, entry));
    if (checks.length > 0) this.step(allocationId, entry, { type: 'observe', checks, now: start.at });
    this.feed(allocationId, entry, history);
    // Its status as fed, even when a listener dropped it on reaching a verdict.
    return this.statusOf(entry);
  }

  private policyProblem(policy: HealthPolicy): string | null {
    if (this.validPolicies.has(policy)) return null;
    const problem = healthPolicyProblem(policy);
    if (problem === null) this.validPolicies.add(policy);
    return problem;
  }

  /** Feeds a view seen now; returns false when the allocation is unknown or the view changed nothing. */
  updateAllocation(allocationId: string, view: AllocationView): boolean {
    const now = this.clock.now();
    return this.observe(allocationId, { views: [{ at: now, view }], asOf: now });
  }

  /** Feeds what happened since the last feed; returns false when the allocation is unknown or nothing changed. */
  observe(allocationId: string, history: HealthHistory): boolean {
    const entry = this.entries.get(allocationId);
    if (entry === undefined) return false;
    return this.feed(allocationId, entry, history);
  }

  /**
   * Feeds the allocation's registered checks, as seen now; returns false when unknown or unchanged.
   * `sampled`: they are a state Nomad's client looks at only every CHECK_LOOKUP_INTERVAL_MS from when
   * it began watching (Consul's checks): they count from its next look, and a later state before that
   * look replaces them, as the look would not have seen them.
   */
  updateChecks(allocationId: string, checks: readonly CheckView[], options: CheckUpdateOptions = {}): boolean {
    const entry = this.entries.get(allocationId);
    if (entry === undefined) return false;
    const at = this.checksAt(entry, options);
    const replaced = this.unqueueChecksAt(entry, at);
    const latest = entry.queue?.findLast((item) => item.checks !== undefined)?.checks ?? entry.context.checks;
    if (checkViewsProblem(checks) !== null || !sameChecks(latest, checks)) this.enqueue(entry, { at, checks });
    else if (!replaced) return false;
    this.advance(allocationId, entry);
    return true;
  }

  /** Forgets an allocation and what it waited for. */
  drop(allocationId: string): boolean {
    const entry = this.entries.get(allocationId);
    if (entry === undefined) return false;
    this.entries.delete(allocationId);
    this.snapshots.delete(allocationId);
    // A decided machine let go of its horizon when it decided.
    if (entry.status === 'active') this.horizon.release(entry);
    this.inspection?.stopped(allocationId);
    return true;
  }

  status(allocationId: string): HealthStatus | undefined {
    const entry = this.entries.get(allocationId);
    return entry === undefined ? undefined : this.statusOf(entry);
  }

  private statusOf(entry: MachineEntry): HealthStatus {
    return { state: entry.value, outcome: entry.context.outcome, rejected: entry.context.rejected };
  }

  /**
   * Feeds the history `since` tells from the view last fed and the data time it held from (where
   * the allocation's next history picks up), and returns it; undefined when the allocation is unknown.
   */
  observeSince<H extends HealthHistory>(allocationId: string, since: (base: { readonly at: number; readonly view: AllocationView }) => H): H | undefined {
    const entry = this.entries.get(allocationId);
    if (entry === undefined) return undefined;
    const history = since({ at: entry.viewAt, view: entry.context.view });
    this.feed(allocationId, entry, history);
    return history;
  }

  /** The machine snapshot itself (for the inspector, or to persist with `getPersistedSnapshot`). */
  snapshot(allocationId: string): AllocationHealthSnapshot | undefined {
    const entry = this.entries.get(allocationId);
    return entry === undefined ? undefined : this.snapshotOf(allocationId, entry);
  }

  /** Where an allocation's machine is and what it knows now (what the snapshot holds, without building one). */
  machine(allocationId: string): HealthMachineState | undefined {
    return this.entries.get(allocationId);
  }

  subscribe(listener: HealthListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Feeds each view at its time, letting time pass between them where the machine waits for it. */
  private feed(allocationId: string, entry: MachineEntry, history: HealthHistory): boolean {
    // A stop waiting for its client's reaction: this history has the reaction, or waits still.
    const waitingStop = entry.queue?.find((item) => item.stop !== undefined)?.at;
    if (waitingStop !== undefined) entry.queue = (entry.queue as Queued[]).filter((item) => item.stop === undefined);
    let changed = false;
    for (const { at, view } of history.views) {
      if (entry.status !== 'active') break;
      // Time passes up to the view (what happened before it is known: the view says so); at the
      // same instant, what was observed goes first. Before the first view there is nothing to judge.
      entry.known = Math.max(entry.known, at);
      if (entry.fed) this.pass(allocationId, entry, at, false);
      entry.fed = true;
      entry.viewAt = Math.max(entry.viewAt, at);
      if (entry.status !== 'active') break;
      // A malformed view still goes to the machine, which records why it ignored it.
      if (allocationViewProblem(view) === null && sameAllocationView(entry.context.view, view)) continue;
      this.step(allocationId, entry, { type: 'observe', view, now: at });
      changed = true;
    }
    if (history.asOf !== null) entry.known = Math.max(entry.known, history.asOf);
    if (history.pendingStop !== undefined && entry.status === 'active') {
      const at = Math.min(history.pendingStop, waitingStop ?? Number.POSITIVE_INFINITY);
      this.enqueue(entry, { at: Math.max(at, entry.context.now), stop: true });
    }
    this.advance(allocationId, entry);
    return changed;
  }

  /**
   * Lets time pass as far as the data and the horizon know, then asks the horizon for the rest. For
   * an allocation whose client is away, only as far as its data speaks: nothing that came after
   * (a stop its client has not seen, its checks) is fed until the client reports again.
   */
  private advance(allocationId: string, entry: MachineEntry): void {
    if (entry.status !== 'active') return;
    if (disconnected(entry.context)) {
      this.pass(allocationId, entry, entry.known, true);
      this.horizon.release(entry);
      return;
    }
    const upTo = Math.max(entry.known, this.horizon.knownUpTo(entry));
    this.pass(allocationId, entry, upTo, true);
    const next = this.nextDue(entry);
    if (next === null) this.horizon.release(entry);
    else this.horizon.request(entry, next);
  }

  /** Feeds, in time order, the machine's wake-ups and queued items due by `upTo` (`inclusive` of it). */
  private pass(allocationId: string, entry: MachineEntry, upTo: number, inclusive: boolean): void {
    for (;;) {
      if (entry.status !== 'active') return;
      const wake = wakeAt(entry.context);
      const queued = entry.queue?.[0];
      const at = Math.min(wake ?? Number.POSITIVE_INFINITY, queued?.at ?? Number.POSITIVE_INFINITY);
      if (!(inclusive ? at <= upTo : at < upTo)) return;
      if (queued !== undefined && queued.at === at) {
        (entry.queue as Queued[]).shift();
        this.step(allocationId, entry, this.queuedEvent(entry, queued));
      } else {
        this.step(allocationId, entry, { type: 'observe', now: at });
      }
    }
  }

  private queuedEvent(entry: MachineEntry, queued: Queued): AllocationHealthEvent {
    if (queued.checks !== undefined) return { type: 'observe', checks: queued.checks, now: queued.at };
    const { view } = entry.context;
    return { type: 'observe', view: { ...view, desiredStatus: 'stop' }, now: queued.at };
  }

  private nextDue(entry: MachineEntry): number | null {
    if (entry.status !== 'active') return null;
    const wake = wakeAt(entry.context);
    const queued = entry.queue?.[0]?.at;
    if (wake === null) return queued ?? null;
    return queued === undefined ? wake : Math.min(wake, queued);
  }

  /** When checks count: when seen, or Nomad's next look at them (from when it began watching). */
  private checksAt(entry: MachineEntry, { sampled, seenAt }: CheckUpdateOptions): number {
    const at = Math.max(Math.min(seenAt ?? Number.POSITIVE_INFINITY, this.clock.now()), entry.context.now);
    const since = entry.context.watchingSince;
    if (sampled !== true || since === null) return at;
    const looks = Math.max(1, Math.ceil((at - since) / CHECK_LOOKUP_INTERVAL_MS));
    return since + looks * CHECK_LOOKUP_INTERVAL_MS;
  }

  /** Removes checks queued to count at `at` (a later state seen before then replaces them); whether there were any. */
  private unqueueChecksAt(entry: MachineEntry, at: number): boolean {
    const index = entry.queue?.findIndex((item) => item.checks !== undefined && item.at === at) ?? -1;
    if (index < 0) return false;
    (entry.queue as Queued[]).splice(index, 1);
    return true;
  }

  private enqueue(entry: MachineEntry, item: Queued): void {
    const queue = (entry.queue ??= []);
    let i = queue.length;
    while (i > 0 && (queue[i - 1] as Queued).at > item.at) i--;
    queue.splice(i, 0, item);
  }

  private snapshotOf(allocationId: string, entry: MachineEntry): AllocationHealthSnapshot {
    let snapshot = this.snapshots.get(allocationId);
    if (snapshot === undefined) this.snapshots.set(allocationId, (snapshot = this.stepper.toSnapshot(entry)));
    return snapshot;
  }

  private step(allocationId: string, entry: MachineEntry, event: AllocationHealthEvent): void {
    const machine: HealthMachineState = entry;
    if (machine.status !== 'active') return;
    const from = machine.value;
    if (this.stepper.advance(entry, event) && this.snapshots.size > 0) this.snapshots.delete(allocationId);
    if (this.inspection !== undefined) this.inspection.stepped(allocationId, event, this.snapshotOf(allocationId, entry));
    const to = entry.value;
    if (from !== to) this.emit({ type: 'transition', allocationId, from, to, at: event.now });
    if (entry.status === 'done') {
      entry.queue = undefined;
      this.horizon.release(entry);
      this.emit({ type: 'outcome', allocationId, outcome: entry.context.outcome as HealthOutcome });
    }
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
