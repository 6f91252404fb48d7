/**
 * The last `capacity` entries by key, oldest dropped first: verdicts of allocations whose actors
 * were stopped stay answerable without the history growing with the cluster's lifetime.
 */
export class BoundedHistory<V> {
  private readonly entries = new Map<string, V>();

  constructor(readonly capacity: number) {
    if (!(capacity >= 1)) throw new RangeError(`history capacity must be at least 1, got ${capacity}`);
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    return this.entries.get(key);
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
  }

  delete(key: string): boolean {
    return this.entries.delete(key);
  }

  values(): IterableIterator<V> {
    return this.entries.values();
  }
}
