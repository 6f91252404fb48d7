/**
 * How far time may pass for an allocation's health machine. A verdict that only time reaches (its
 * min_healthy_time served, its deadline passed) holds only if nothing that happened before it is
 * still on its way to us: a remote observer must wait until it knows. A Horizon tells, per
 * allocation, up to when everything is known, and calls back when that moves for an allocation
 * that asked.
 *
 * ClockHorizon is the observer that sees everything at once (a replay, a test, a registry fed
 * directly): what the clock says has happened has. The supervisor's is src/intake/freshness.ts.
 */
import type { Clock, TimerHandle } from '../clock/index.js';

export interface Horizon {
  /** Everything about this allocation that happened up to the returned time is known. */
  knownUpTo(allocationId: string): number;
  /** The registry needs to know up to `at` for this allocation (replaces an earlier request). */
  request(allocationId: string, at: number): void;
  /** No more interest in this allocation. */
  release(allocationId: string): void;
  /** Called (once, by the registry) with the function to tell which allocations' horizon moved. */
  connect(onAdvance: (allocationIds: Iterable<string>) => void): void;
}

/**
 * Knows everything up to the clock's now, less `settleMs` (how late data may come: 0 when it comes at
 * once): wakes each allocation when the time it asked for is that far behind.
 */
export class ClockHorizon implements Horizon {
  private readonly timers = new Map<string, { at: number; handle: TimerHandle }>();
  private onAdvance: (allocationIds: Iterable<string>) => void = () => undefined;
  private readonly settleMs: number;

  constructor(
    private readonly clock: Clock,
    options: { readonly settleMs?: number } = {},
  ) {
    this.settleMs = options.settleMs ?? 0;
  }

  knownUpTo(): number {
    return this.clock.now() - this.settleMs;
  }

  request(allocationId: string, at: number): void {
    const armed = this.timers.get(allocationId);
    if (armed?.at === at) return;
    if (armed !== undefined) this.clock.clearTimeout(armed.handle);
    const handle = this.clock.setTimeout(() => {
      if (this.timers.get(allocationId)?.handle !== handle) return;
      this.timers.delete(allocationId);
      this.onAdvance([allocationId]);
    }, Math.max(0, at + this.settleMs - this.clock.now()));
    this.timers.set(allocationId, { at, handle });
  }

  release(allocationId: string): void {
    const armed = this.timers.get(allocationId);
    if (armed === undefined) return;
    this.clock.clearTimeout(armed.handle);
    this.timers.delete(allocationId);
  }

  connect(onAdvance: (allocationIds: Iterable<string>) => void): void {
    this.onAdvance = onAdvance;
  }

  /** Timers armed (at most one per allocation). */
  get pending(): number {
    return this.timers.size;
  }
}
