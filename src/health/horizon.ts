/**
 * How far time may pass for an allocation's health machine. A verdict that only time reaches (its
 * min_healthy_time served, its deadline passed) holds only if nothing that happened before it is
 * still on its way to us: a remote observer must wait until it knows. A Horizon tells, per
 * allocation, up to when everything is known, and calls back when that moves for an allocation
 * that asked.
 *
 * A horizon keeps no table of allocations: what it knows of one it keeps on the allocation's own
 * record (a HorizonWaiter: the registry's entry), and hands that record back when it moves, so
 * nothing is looked up by ID on the way.
 *
 * ClockHorizon is the observer that sees everything at once (a replay, a test, a registry fed
 * directly): what the clock says has happened has. The supervisor's is src/intake/freshness.ts.
 */
import type { Clock, TimerHandle } from '../clock/index.js';

/**
 * An allocation's record as a horizon sees it. The horizon's fields are its own (its owner leaves them
 * alone): the time asked for (undefined: nothing), the request's order among equal times, and the
 * record's place in the horizon's queue (-1: not in it).
 */
export interface HorizonWaiter {
  readonly allocationId: string;
  horizonDue: number | undefined;
  horizonSeq: number;
  horizonSlot: number;
}

/** A waiter's horizon fields before any request. */
export const NOT_WAITING = { horizonDue: undefined, horizonSeq: 0, horizonSlot: -1 } as const;

export interface Horizon<W extends HorizonWaiter = HorizonWaiter> {
  /** Everything about this allocation that happened up to the returned time is known. */
  knownUpTo(waiter: W): number;
  /** It needs to know up to `at` (replaces an earlier request). */
  request(waiter: W, at: number): void;
  /** No more interest in this allocation. */
  release(waiter: W): void;
  /** Called (once, by the registry) with the function to tell whose horizon moved. */
  connect(onAdvance: (waiters: Iterable<W>) => void): void;
}

/** Slots of a new queue's key arrays (they double as it grows). */
const INITIAL_SLOTS = 64;
/** A queue rebuilds without its released slots once they are most of it, and at least this many. */
const COMPACT_AT = 1_024;

/**
 * The requests in force, earliest first: a binary heap of the waiters themselves, each knowing its
 * place, so a request moves its waiter in place (no ticket per request). Each slot's time and request
 * order sit in typed arrays beside it: a sift compares those, and touches only the waiters it moves,
 * not every one it passes (at 100,000 waiting, each of them is a cache miss).
 *
 * A release empties its waiter's slot and leaves the slot's key in the heap, dropped when it comes to
 * the top: a decided allocation costs one write, not a sift through the heap. Empty slots are
 * bounded: once they are most of the heap, it is rebuilt without them. A round takes what is due
 * without looking at the rest. A waiter taken off the queue stays in force until announced, unless
 * it asks again or is released meanwhile.
 */
export class WaitingQueue<W extends HorizonWaiter> {
  /** The heap's slots: a waiter, or undefined where one was released. */
  private readonly slots: (W | undefined)[] = [];
  /** Each slot's time and request order (its waiter's horizonDue and horizonSeq, kept beside the heap). */
  private dues = new Float64Array(INITIAL_SLOTS);
  private orders = new Float64Array(INITIAL_SLOTS);
  private released = 0;
  private order = 0;

  /** `compactAt`: the least count of released slots that rebuilds the heap (a test makes it small). */
  constructor(private readonly compactAt = COMPACT_AT) {}

  /** Records the request; false when the same one is already in force. */
  request(waiter: W, at: number): boolean {
    if (waiter.horizonDue === at) return false;
    waiter.horizonDue = at;
    waiter.horizonSeq = ++this.order;
    const slot = waiter.horizonSlot;
    if (slot < 0) {
      this.push(waiter);
      return true;
    }
    this.dues[slot] = at;
    this.orders[slot] = waiter.horizonSeq;
    this.down(this.up(slot));
    return true;
  }

  release(waiter: W): void {
    const slot = waiter.horizonSlot;
    waiter.horizonDue = undefined;
    if (slot < 0) return;
    waiter.horizonSlot = -1;
    this.slots[slot] = undefined;
    if (++this.released >= this.compactAt && 2 * this.released > this.slots.length) this.compact();
  }

  /** The earliest request in force. */
  earliest(): W | undefined {
    this.dropReleasedTop();
    return this.slots[0];
  }

  /** Takes every request due by `target` off the queue (they stay in force until announced). */
  takeDue(target: number): W[] {
    const due: W[] = [];
    for (let top = this.earliest(); top !== undefined && (this.dues[0] as number) <= target; top = this.earliest()) {
      top.horizonSlot = -1;
      this.removeTop();
      due.push(top);
    }
    return due;
  }

  /** Puts taken requests back (a round that failed); those replaced or released meanwhile are left out. */
  putBack(taken: readonly W[]): void {
    for (const waiter of taken) {
      if (this.stillTaken(waiter)) this.push(waiter);
    }
  }

  /** Ends the taken requests still in force: their waiters, to tell that their horizon moved. */
  settle(taken: readonly W[]): W[] {
    const waiters: W[] = [];
    for (const waiter of taken) {
      if (!this.stillTaken(waiter)) continue;
      waiter.horizonDue = undefined;
      waiters.push(waiter);
    }
    return waiters;
  }

  clear(): void {
    for (const waiter of this.slots) {
      if (waiter === undefined) continue;
      waiter.horizonSlot = -1;
      waiter.horizonDue = undefined;
    }
    this.slots.length = 0;
    this.released = 0;
  }

  /** Taken and not asked again (back in the queue) or released since. */
  private stillTaken(waiter: W): boolean {
    return waiter.horizonDue !== undefined && waiter.horizonSlot < 0;
  }

  private before(a: number, b: number): boolean {
    const ad = this.dues[a] as number;
    const bd = this.dues[b] as number;
    return ad < bd || (ad === bd && (this.orders[a] as number) < (this.orders[b] as number));
  }

  /** Queues the waiter's request in force (its time and order). */
  private push(waiter: W): void {
    const slot = this.slots.length;
    if (slot === this.dues.length) this.grow();
    this.dues[slot] = waiter.horizonDue as number;
    this.orders[slot] = waiter.horizonSeq;
    this.slots.push(waiter);
    waiter.horizonSlot = slot;
    this.up(slot);
  }

  private grow(): void {
    const dues = new Float64Array(this.dues.length * 2);
    const orders = new Float64Array(this.orders.length * 2);
    dues.set(this.dues);
    orders.set(this.orders);
    this.dues = dues;
    this.orders = orders;
  }

  /** Released slots that came to the top leave the heap. */
  private dropReleasedTop(): void {
    while (this.slots.length > 0 && this.slots[0] === undefined) {
      this.released--;
      this.removeTop();
    }
  }

  /** Takes the top slot out: the last one takes its place and goes down. */
  private removeTop(): void {
    const last = this.slots.length - 1;
    if (last > 0) this.move(last, 0);
    this.slots.pop();
    if (last > 1) this.down(0);
  }

  /** Rebuilds the heap from the slots still held (Floyd's heapify: linear). */
  private compact(): void {
    let kept = 0;
    for (let slot = 0; slot < this.slots.length; slot++) {
      if (this.slots[slot] !== undefined) this.move(slot, kept++);
    }
    this.slots.length = kept;
    this.released = 0;
    for (let slot = (kept >> 1) - 1; slot >= 0; slot--) this.down(slot);
  }

  /** Copies slot `from` (waiter, time, order) into slot `to`. */
  private move(from: number, to: number): void {
    const waiter = this.slots[from];
    this.slots[to] = waiter;
    this.dues[to] = this.dues[from] as number;
    this.orders[to] = this.orders[from] as number;
    if (waiter !== undefined) waiter.horizonSlot = to;
  }

  /** Swaps two slots. */
  private swap(a: number, b: number): void {
    const waiter = this.slots[a];
    const due = this.dues[a] as number;
    const order = this.orders[a] as number;
    this.move(b, a);
    this.slots[b] = waiter;
    this.dues[b] = due;
    this.orders[b] = order;
    if (waiter !== undefined) waiter.horizonSlot = b;
  }

  /** Moves the slot at `slot` up while it is due before its parent; its slot then. */
  private up(slot: number): number {
    let i = slot;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
    return i;
  }

  /** Moves the slot at `slot` down while a child is due before it. */
  private down(slot: number): void {
    const n = this.slots.length;
    let i = slot;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && this.before(right, left) ? right : left;
      if (!this.before(child, i)) break;
      this.swap(i, child);
      i = child;
    }
  }
}

/**
 * Knows everything up to the clock's now, less `settleMs` (how late data may come: 0 when it comes at
 * once): wakes each allocation when the time it asked for is that far behind, on one timer.
 */
export class ClockHorizon<W extends HorizonWaiter = HorizonWaiter> implements Horizon<W> {
  private readonly queue = new WaitingQueue<W>();
  private onAdvance: (waiters: Iterable<W>) => void = () => undefined;
  private readonly settleMs: number;
  /** The timer, armed for the earliest request's time. */
  private timer: { due: number; handle: TimerHandle } | undefined;

  constructor(
    private readonly clock: Clock,
    options: { readonly settleMs?: number } = {},
  ) {
    this.settleMs = options.settleMs ?? 0;
  }

  knownUpTo(): number {
    return this.clock.now() - this.settleMs;
  }

  request(waiter: W, at: number): void {
    if (this.queue.request(waiter, at)) this.schedule();
  }

  release(waiter: W): void {
    this.queue.release(waiter);
    // No timer left armed for no one (a decided allocation leaves none behind).
    this.schedule();
  }

  connect(onAdvance: (waiters: Iterable<W>) => void): void {
    this.onAdvance = onAdvance;
  }

  private schedule(): void {
    const due = this.queue.earliest()?.horizonDue;
    if (this.timer?.due === due) return;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer.handle);
    this.timer = undefined;
    if (due === undefined) return;
    // What is due by the time armed for, compared as stored: no clock arithmetic decides who wakes.
    const handle = this.clock.setTimeout(() => {
      this.timer = undefined;
      const waiters = this.queue.settle(this.queue.takeDue(due));
      if (waiters.length > 0) this.onAdvance(waiters);
      this.schedule();
    }, Math.max(0, due + this.settleMs - this.clock.now()));
    this.timer = { due, handle };
  }
}
