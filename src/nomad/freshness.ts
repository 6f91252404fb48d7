/**
 * The newest ModifyIndex delivered per allocation, so that an older copy (a replayed batch after a
 * reconnect, a listing that raced an event) is never delivered after a newer one.
 */
export class AllocationFreshness {
  private readonly delivered = new Map<string, number>();

  /** True, and remembered, when this version is newer than every one delivered before. */
  admit(id: string, modifyIndex: number): boolean {
    const known = this.delivered.get(id);
    if (known !== undefined && modifyIndex <= known) return false;
    this.delivered.set(id, modifyIndex);
    return true;
  }

  /** ModifyIndex of the newest version delivered, if any. */
  known(id: string): number | undefined {
    return this.delivered.get(id);
  }

  /** Forgets every allocation not in `ids` (garbage-collected by Nomad: absent from a full listing). */
  retainOnly(ids: ReadonlySet<string>): void {
    for (const id of this.delivered.keys()) if (!ids.has(id)) this.delivered.delete(id);
  }

  get size(): number {
    return this.delivered.size;
  }
}
