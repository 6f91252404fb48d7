/**
 * The last `capacity` entries by key, oldest dropped first: verdicts of allocations whose actors
 * were stopped stay answerable without the history growing with the cluster's lifetime.
 */
export class BoundedHistory<V> {
  private readonly map = new Map<string, V>();

  constructor(readonly capacity: number) {
    if (!(capacity >= 1)) throw new RangeError(`history capacity must be at least 1, got ${capacity}`);
  }

  get size(): number {
    return this.map.size;
  }

  get(key: string): V | undefined {
    return this.map.get(key);
  }

  has(key: string): boolean {
    return this.map.has(key);
  }

  /** Stores `value` under `key` (the newest now); returns the key it forgot to make room, if any. */
  set(key: string, value: V): string | undefined {
    // A new key goes last by itself; a known one is moved there (a Map keeps its first place).
    const size = this.map.size;
    this.map.set(key, value);
    if (this.map.size === size) {
      this.map.delete(key);
      this.map.set(key, value);
    }
    if (this.map.size <= this.capacity) return undefined;
    const oldest = this.map.keys().next();
    if (oldest.done) return undefined;
    this.map.delete(oldest.value);
    return oldest.value;
  }

  delete(key: string): boolean {
    return this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
  }

  values(): IterableIterator<V> {
    return this.map.values();
  }

  entries(): IterableIterator<[string, V]> {
    return this.map.entries();
  }
}
