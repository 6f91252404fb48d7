import type { Clock, TimerHandle } from './clock.js';
import { TimerHeap, type HeapTimer } from './timerHeap.js';

export interface VirtualClockOptions {
  /** Initial time in epoch milliseconds (default 0). A replay starts at its recording's time. */
  start?: number;
}

/** Raised by runUntilIdle when timers keep re-arming themselves (an interval, a polling loop). */
export class VirtualClockRunawayError extends Error {
  readonly code = 'WARDEN_VIRTUAL_CLOCK_RUNAWAY';

  constructor(readonly fired: number) {
    super(`VirtualClock.runUntilIdle fired ${fired} timers and timers are still pending; use advance() for periodic work`);
    this.name = 'VirtualClockRunawayError';
  }
}

/**
 * Time that moves only when told to. Due timers fire in time order, ties in scheduling order; a
 * timer armed by a firing timer inside the window fires in the same advance. Timers live in a
 * binary heap and fire from a loop, so 100,000 due timers neither re-sort nor recurse. Cancelled
 * timers stay in the heap, marked dead, and are skipped when they surface.
 */
export class VirtualClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly heap = new TimerHeap();
  /** Live timers by handle; absence means cleared or fired. */
  private readonly live = new Map<number, HeapTimer>();

  constructor(options: VirtualClockOptions = {}) {
    this.current = options.start ?? 0;
  }

  now(): number {
    return this.current;
  }

  setTimeout(callback: () => void, delayMs: number): TimerHandle {
    const delay = Number.isFinite(delayMs) && delayMs > 0 ? delayMs : 0;
    const timer: HeapTimer = { due: this.current + delay, seq: ++this.seq, callback };
    this.heap.push(timer);
    this.live.set(timer.seq, timer);
    return timer.seq;
  }

  clearTimeout(handle: TimerHandle): void {
    if (typeof handle === 'number') this.live.delete(handle);
  }

  /** Number of timers armed and not yet fired or cleared. */
  pending(): number {
    return this.live.size;
  }

  /** Due time of the next live timer, if any. */
  nextDue(): number | undefined {
    return this.peekLive()?.due;
  }

  /** Moves time forward by `ms`, firing every timer due on the way. Returns how many fired. */
  advance(ms: number): number {
    if (!(ms >= 0)) throw new RangeError(`VirtualClock.advance needs a non-negative duration, got ${ms}`);
    return this.advanceTo(this.current + ms);
  }

  /** Moves time forward to `time` (epoch ms), firing every timer due up to and including it. */
  advanceTo(time: number): number {
    if (time < this.current) throw new RangeError(`VirtualClock cannot go back from ${this.current} to ${time}`);
    let fired = 0;
    for (let next = this.peekLive(); next !== undefined && next.due <= time; next = this.peekLive()) {
      this.fire(next);
      fired++;
    }
    this.current = time;
    return fired;
  }

  /**
   * Fires timers in order, jumping time to each, until none is left. Stops with
   * VirtualClockRunawayError after `maxTimers` firings (periodic timers never go idle).
   */
  runUntilIdle(maxTimers = 10_000_000): number {
    let fired = 0;
    for (let next = this.peekLive(); next !== undefined; next = this.peekLive()) {
      if (fired >= maxTimers) throw new VirtualClockRunawayError(fired);
      this.fire(next);
      fired++;
    }
    return fired;
  }

  private fire(timer: HeapTimer): void {
    this.heap.pop();
    this.live.delete(timer.seq);
    this.current = timer.due;
    timer.callback();
  }

  /** The earliest timer still live, discarding cleared ones on top of the heap. */
  private peekLive(): HeapTimer | undefined {
    for (let top = this.heap.peek(); top !== undefined; top = this.heap.peek()) {
      if (this.live.has(top.seq)) return top;
      this.heap.pop();
    }
    return undefined;
  }
}
