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

function before(a: HorizonWaiter, b: HorizonWaiter): boolean {
  const ad = a.horizonDue as number;
  const bd = b.horizonDue as number;
  return ad < bd || (ad === bd && a.horizonSeq < b.horizonSeq);
}

/**
 * The requests in force, earliest first: a binary heap of the waiters themselves, each knowing its
 * place, so a request moves its waiter in place and a release takes it out (no ticket per request,
 * none left behind). A round takes what is due without looking at the rest. A waiter taken off the
 * queue stays in force until announced, unless it asks again or is released meanwhile.
 */
export class WaitingQueue<W extends HorizonWaiter> {
  private readonly heap: W[] = [];
  private seq = 0;

  /** Records the request; false when the same one is already in force. */
  request(waiter: W, at: number): boolean {
    if (waiter.horizonDue === at) return false;
    waiter.horizonDue = at;
    waiter.horizonSeq = ++this.seq;
    if (waiter.horizonSlot < 0) this.push(waiter);
    else this.down(this.up(waiter.horizonSlot));
    return true;
  }

  release(waiter: W): void {
    if (waiter.horizonSlot >= 0) this.removeAt(waiter.horizonSlot);
    waiter.horizonDue = undefined;
  }

  /** The earliest request in force. */
  earliest(): W | undefined {
    return this.heap[0];
  }

  /** Takes every request due by `target` off the queue (they stay in force until announced). */
  takeDue(target: number): W[] {
    const due: W[] = [];
    for (let top = this.heap[0]; top !== undefined && (top.horizonDue as number) <= target; top = this.heap[0]) {
      this.removeAt(0);
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
    for (const waiter of this.heap) {
      waiter.horizonSlot = -1;
      waiter.horizonDue = undefined;
    }
    this.heap.length = 0;
  }

  /** Taken and not asked again (back in the queue) or released since. */
  private stillTaken(waiter: W): boolean {
    return waiter.horizonDue !== undefined && waiter.horizonSlot < 0;
  }

  private push(waiter: W): void {
    this.up(this.heap.push(waiter) - 1);
  }

  private removeAt(slot: number): void {
    const heap = this.heap;
    const removed = heap[slot] as W;
    removed.horizonSlot = -1;
    const last = heap.pop() as W;
    if (last === removed) return;
    this.place(last, slot);
    this.down(this.up(slot));
  }

  private place(waiter: W, slot: number): void {
    this.heap[slot] = waiter;
    waiter.horizonSlot = slot;
  }

  /** Moves the waiter at `slot` up while it is due before its parent; its slot then. */
  private up(slot: number): number {
    const heap = this.heap;
    const waiter = heap[slot] as W;
    let i = slot;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as W;
      if (!before(waiter, p)) break;
      this.place(p, i);
      i = parent;
    }
    this.place(waiter, i);
    return i;
  }

  /** Moves the waiter at `slot` down while a child is due before it. */
  private down(slot: number): void {
    const heap = this.heap;
    const waiter = heap[slot] as W;
    const n = heap.length;
    let i = slot;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && before(heap[right] as W, heap[left] as W) ? right : left;
      const c = heap[child] as W;
      if (!before(c, waiter)) break;
      this.place(c, i);
      i = child;
    }
    this.place(waiter, i);
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
