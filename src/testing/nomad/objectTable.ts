/**
 * One table of the fake cluster (allocations, evaluations, deployments): objects by ID, and their
 * IDs by job, as Nomad's state store indexes them by job. A job's objects are read without a scan
 * of the whole table, so a write costs the same on a cluster of ten jobs or of thousands.
 */
import type { JsonObject } from './jobSpec.js';

/** A job's key in the tables: its namespace and ID. */
export const jobKey = (namespace: string, id: string): string => `${namespace}\u0000${id}`;

const jobOf = (object: JsonObject): string => jobKey(String(object.Namespace), String(object.JobID));

export class ObjectTable {
  private readonly objects = new Map<string, JsonObject>();
  private readonly byJob = new Map<string, Set<string>>();

  get size(): number {
    return this.objects.size;
  }

  get(id: string): JsonObject | undefined {
    return this.objects.get(id);
  }

  /** Stores the object under its ID (replacing one of the same ID; its JobID and Namespace never change). */
  set(id: string, object: JsonObject): void {
    const previous = this.objects.get(id);
    if (previous !== undefined && jobOf(previous) !== jobOf(object)) this.unindex(id, previous);
    this.objects.set(id, object);
    const key = jobOf(object);
    let ids = this.byJob.get(key);
    if (ids === undefined) {
      ids = new Set();
      this.byJob.set(key, ids);
    }
    ids.add(id);
  }

  delete(id: string): void {
    const object = this.objects.get(id);
    if (object === undefined) return;
    this.objects.delete(id);
    this.unindex(id, object);
  }

  values(): IterableIterator<JsonObject> {
    return this.objects.values();
  }

  /** The job's objects, in the order they were first stored. */
  ofJob(namespace: string, jobId: string): JsonObject[] {
    const ids = this.byJob.get(jobKey(namespace, jobId));
    return ids === undefined ? [] : [...ids].map((id) => this.objects.get(id)!);
  }

  private unindex(id: string, object: JsonObject): void {
    const key = jobOf(object);
    const ids = this.byJob.get(key);
    ids?.delete(id);
    if (ids?.size === 0) this.byJob.delete(key);
  }
}
