/**
 * What became of the allocations judged, and of those left unjudged, within a bounded memory: the
 * last `capacity` of each, oldest forgotten first, so the book does not grow with the cluster's
 * lifetime. Waiters for a verdict are answered as it comes, or told why it will not.
 */
import { BoundedHistory } from '../boundedHistory.js';
import { AllocationNotJudgedError } from './errors.js';
import type { AllocationRef, VerdictRecord } from './types.js';

interface Waiter {
  resolve(record: VerdictRecord): void;
  reject(error: Error): void;
}

/** An allocation Warden does not judge, and why (for the deployment its ref names). */
export interface Unjudged {
  readonly alloc: AllocationRef;
  readonly reason: string;
}

const NO_WAITERS: readonly Waiter[] = [];

export class VerdictBook {
  private readonly verdicts: BoundedHistory<VerdictRecord>;
  private readonly unjudged: BoundedHistory<Unjudged>;
  private readonly waiters: BoundedHistory<Waiter[]>;

  constructor(capacity: number) {
    this.verdicts = new BoundedHistory(capacity);
    this.unjudged = new BoundedHistory(capacity);
    this.waiters = new BoundedHistory(capacity);
  }

  verdict(allocId: string): VerdictRecord | undefined {
    return this.verdicts.get(allocId);
  }

  unjudgedReason(allocId: string): Unjudged | undefined {
    return this.unjudged.get(allocId);
  }

  /** Every verdict kept, oldest first. */
  records(): IterableIterator<VerdictRecord> {
    return this.verdicts.values();
  }

  record(record: VerdictRecord): void {
    const { allocId } = record.alloc;
    this.verdicts.set(allocId, record);
    for (const waiter of this.takeWaiters(allocId)) waiter.resolve(record);
  }

  markUnjudged(unjudged: Unjudged): void {
    const { allocId } = unjudged.alloc;
    this.unjudged.set(allocId, unjudged);
    for (const waiter of this.takeWaiters(allocId)) waiter.reject(new AllocationNotJudgedError(allocId, unjudged.reason));
  }

  /** Every allocation left unjudged that is kept, oldest first. */
  unjudgedRecords(): IterableIterator<Unjudged> {
    return this.unjudged.values();
  }

  /** A promise for the allocation's next verdict (a waiter too many forgets the oldest: it stays pending). */
  wait(allocId: string): Promise<VerdictRecord> {
    return new Promise((resolve, reject) => {
      this.waiters.set(allocId, [...(this.waiters.get(allocId) ?? []), { resolve, reject }]);
    });
  }

  /** Fails every waiter (the intake stopped). */
  failAll(error: (allocId: string) => Error): void {
    for (const [allocId, waiters] of this.waiters.entries()) for (const waiter of waiters) waiter.reject(error(allocId));
    this.waiters.clear();
  }

  private takeWaiters(allocId: string): readonly Waiter[] {
    const waiters = this.waiters.get(allocId) ?? NO_WAITERS;
    if (waiters.length > 0) this.waiters.delete(allocId);
    return waiters;
  }
}
