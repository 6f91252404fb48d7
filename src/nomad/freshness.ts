/**
 * The newest ModifyIndex delivered per allocation, so that an older copy (a replayed batch after a
 * reconnect, a listing that raced an event) is never delivered after a newer one.
 *
 * Bounded: Nomad sends no event when it garbage-collects an allocation, and only a reconnect's full
 * listing shows which are gone, so a long-lived stream over a churning cluster (a runner pool makes
 * an allocation per claim) would otherwise remember every allocation it ever saw. An older copy
 * can only come shortly after the newer one (a replay starts at the last index; a listing is as of
 * its own index), so an allocation not updated while `generation` others were is forgotten: two
 * generations of at most `generation` entries each, the older dropped whole when the newer fills,
 * at O(1) per update.
 */
/** Allocations remembered per generation: far more updates than a replay or a listing can lag by. */
const DEFAULT_GENERATION = 131_072;

export class AllocationFreshness {
  private current = new Map<string, number>();
  private previous = new Map<string, number>();

  constructor(private readonly generation = DEFAULT_GENERATION) {
    if (!(generation >= 1)) throw new RangeError(`freshness generation must be at least 1, got ${generation}`);
  }

  /** True, and remembered, when this version is newer than every one delivered before. */
  admit(id: string, modifyIndex: number): boolean {
    const known = this.known(id);
    if (known !== undefined && modifyIndex <= known) return false;
    this.remember(id, modifyIndex);
    return true;
  }

  /** ModifyIndex of the newest version delivered, if any. */
  known(id: string): number | undefined {
    return this.current.get(id) ?? this.previous.get(id);
  }

  /** Forgets every allocation not in `ids` (garbage-collected by Nomad: absent from a full listing). */
  retainOnly(ids: ReadonlySet<string>): void {
    for (const map of [this.current, this.previous]) for (const id of map.keys()) if (!ids.has(id)) map.delete(id);
  }

  get size(): number {
    let size = this.current.size;
    for (const id of this.previous.keys()) if (!this.current.has(id)) size++;
    return size;
  }

  private remember(id: string, modifyIndex: number): void {
    if (this.current.size >= this.generation && !this.current.has(id)) {
      this.previous = this.current;
      this.current = new Map();
    }
    this.current.set(id, modifyIndex);
  }
}
