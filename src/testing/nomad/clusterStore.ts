/**
 * The tables of the fake cluster (jobs with their versions, allocations, evaluations,
 * deployments), the raft-like index, and writes: every change runs inside one write at a new index
 * and publishes its events as one batch (or, where Nomad does, several items at that index).
 * Reads give what the HTTP API serves. Objects from a recording are stored as they came.
 */
import type { Clock } from '../../clock/index.js';
import type { Allocation, Deployment, Evaluation, Job } from '../../nomad/types.js';
import type { EventBroker, StreamEvent } from './eventBroker.js';
import { NomadApiError } from './errors.js';
import { nanosFromMillis } from './goText.js';
import type { JsonObject } from './jobSpec.js';
import { allocStub, cloneJson, jobStub, omitEmpty } from './objects.js';
import { byCreateIndex, jobAt, jobSummary, matchesNamespace, type JobRecord } from './clusterRules.js';
import { jobKey, ObjectTable } from './objectTable.js';
import { matchesUuidPrefix, uuidDigits } from './uuidIndex.js';

export type Table = 'jobs' | 'job_version' | 'job_summary' | 'allocs' | 'evals' | 'deployment';

interface PendingWrite {
  index: number;
  /** Items published at this index (a registration is two: the job, then its evaluation). */
  batches: StreamEvent[][];
}

export { jobKey };

/**
 * What an event carries of an object, as it is now and for good. Jobs are never changed in place
 * (every change stores a new object); allocations and evaluations change only field by field at the
 * top level, so the copy omitEmpty makes is enough; deployments' group states change in place.
 */
function payloadOf(topic: string, object: JsonObject): JsonObject {
  if (topic === 'Allocation' || topic === 'Evaluation') return omitEmpty(object);
  return topic === 'Job' ? object : cloneJson(object);
}

export class ClusterStore {
  private lastIndex: number;
  private readonly tableIndexes = new Map<Table, number>();
  protected readonly jobs = new Map<string, JobRecord>();
  protected readonly allocs = new ObjectTable();
  /** The job version each allocation runs (Allocation events do not carry it). */
  protected readonly allocJobs = new Map<string, JsonObject>();
  protected readonly evals = new ObjectTable();
  protected readonly deployments = new ObjectTable();
  private readonly changeListeners = new Set<() => void>();
  private write: PendingWrite | undefined;

  constructor(
    protected readonly clock: Clock,
    private readonly broker: EventBroker,
    initialIndex: number,
  ) {
    this.lastIndex = initialIndex;
  }

  /** The latest raft index. */
  get index(): number {
    return this.lastIndex;
  }

  /** The index of the last write to a table (what Nomad's list endpoints report); at least 1. */
  tableIndex(...tables: Table[]): number {
    return Math.max(1, ...tables.map((t) => this.tableIndexes.get(t) ?? 0));
  }

  /** Called after every write (blocking queries re-check). Returns the unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** Runs `changes` as one raft write: one index, one event batch. */
  batch<T>(changes: () => T): T {
    if (this.write !== undefined) return changes();
    this.write = { index: this.lastIndex + 1, batches: [[]] };
    try {
      return changes();
    } finally {
      const write = this.write;
      this.write = undefined;
      this.lastIndex = write.index;
      for (const events of write.batches) this.broker.publish({ Index: write.index, Events: events });
      for (const listener of [...this.changeListeners]) listener();
    }
  }

  protected get current(): PendingWrite {
    if (this.write === undefined) throw new Error('ClusterStore: change outside of a write');
    return this.write;
  }

  protected touch(...tables: Table[]): number {
    const { index } = this.current;
    for (const table of tables) this.tableIndexes.set(table, index);
    return index;
  }

  protected nowNanos(): bigint {
    return nanosFromMillis(this.clock.now());
  }

  /** `extra` goes beside the object in the payload (Nomad 2.x's `Deleted: true` on a purge). */
  protected publish(topic: string, type: string, object: JsonObject, extra: JsonObject = {}): void {
    const events = this.current.batches[this.current.batches.length - 1]!;
    const jobId = String(object.JobID ?? object.ID);
    const filterKeys =
      topic === 'Job' ? null : topic === 'Deployment' ? [jobId] : [jobId, String(object.DeploymentID ?? '')];
    const existing = events.findIndex((e) => e.Topic === topic && e.Key === object.ID);
    const event: StreamEvent = {
      Topic: topic, Type: type, Key: String(object.ID), Namespace: String(object.Namespace ?? 'default'),
      FilterKeys: filterKeys, Index: this.current.index, Payload: { [topic]: payloadOf(topic, object), ...extra },
    };
    if (existing >= 0) events[existing] = event;
    else events.push(event);
  }

  /** Whether an allocation, evaluation or deployment is stored under exactly this ID. */
  hasObject(id: string): boolean {
    return this.allocs.get(id) !== undefined || this.evals.get(id) !== undefined || this.deployments.get(id) !== undefined;
  }

  job(id: string, options: { namespace?: string; version?: number } = {}): Job | undefined {
    const record = this.jobs.get(jobKey(options.namespace ?? 'default', id));
    const job = options.version === undefined ? record?.current : record?.versions.get(options.version);
    return job as Job | undefined;
  }

  jobVersions(id: string, namespace = 'default'): Job[] {
    const record = this.jobs.get(jobKey(namespace, id));
    return record ? ([...record.versions.values()].sort((a, b) => Number(b.Version) - Number(a.Version)) as Job[]) : [];
  }

  /** GET /v1/job/:id/summary: allocation counts per group. */
  jobSummary(id: string, namespace = 'default'): JsonObject | undefined {
    const record = this.jobs.get(jobKey(namespace, id));
    return record && jobSummary(record.current, this.allocs.ofJob(namespace, id), record.summaryIndex);
  }

  listJobs(options: { namespace?: string; prefix?: string } = {}): JsonObject[] {
    return [...this.jobs.values()]
      .map((r) => r.current)
      .filter((job) => matchesNamespace(job, options.namespace) && String(job.ID).startsWith(options.prefix ?? ''))
      .sort((a, b) => String(a.ID).localeCompare(String(b.ID)))
      .map((job) => jobStub(job, this.jobSummary(String(job.ID), String(job.Namespace))!));
  }

  /** GET /v1/allocation/:id: the allocation with its Job embedded. */
  allocation(id: string): Allocation | undefined {
    const alloc = this.allocs.get(id);
    if (alloc === undefined) return undefined;
    return omitEmpty({ ...alloc, Job: this.allocJobs.get(id) ?? null }) as Allocation;
  }

  /** Allocation stubs, optionally of one job. */
  listAllocations(options: { namespace?: string; prefix?: string; jobId?: string } = {}): JsonObject[] {
    return this.rows(this.allocs, options)
      .sort(byCreateIndex)
      .map((a) => allocStub(a, this.allocJobs.get(String(a.ID))));
  }

  evaluation(id: string): Evaluation | undefined {
    const evaluation = this.evals.get(id);
    return evaluation && (omitEmpty(evaluation) as Evaluation);
  }

  listEvaluations(options: { namespace?: string; prefix?: string; jobId?: string } = {}): Evaluation[] {
    return this.rows(this.evals, options)
      .sort(byCreateIndex)
      .map((e) => omitEmpty(e) as Evaluation);
  }

  deployment(id: string): Deployment | undefined {
    return this.deployments.get(id) as Deployment | undefined;
  }

  listDeployments(options: { namespace?: string; prefix?: string; jobId?: string } = {}): Deployment[] {
    return this.rows(this.deployments, options)
      .sort((a, b) => Number(b.CreateIndex) - Number(a.CreateIndex)) as Deployment[];
  }

  /**
   * A table's rows in the namespace ("*": every one) whose ID has the prefix (compared as the bytes it
   * decodes to, as Nomad's UUID index does: none for a prefix that is not one), of one job when
   * `jobId` is given (read from the job index).
   */
  private rows(table: ObjectTable, options: { namespace?: string; prefix?: string; jobId?: string }): JsonObject[] {
    const namespace = options.namespace ?? 'default';
    const candidates = options.jobId === undefined ? [...table.values()] : namespace === '*' ? [...table.values()].filter((o) => o.JobID === options.jobId) : table.ofJob(namespace, options.jobId);
    const prefix = uuidDigits(options.prefix ?? '', false);
    if ('error' in prefix) return [];
    return candidates.filter((o) => matchesNamespace(o, options.namespace) && matchesUuidPrefix(String(o.ID), prefix.digits));
  }

  /**
   * Nomad's core garbage collection: forgets allocations and evaluations (of jobs gone, typically).
   * Nothing is published and no index moves, as in Nomad, where GC'd objects just disappear from reads.
   */
  garbageCollect(objects: { allocIds?: Iterable<string>; evalIds?: Iterable<string> }): void {
    for (const id of objects.allocIds ?? []) {
      this.allocs.delete(id);
      this.allocJobs.delete(id);
    }
    for (const id of objects.evalIds ?? []) this.evals.delete(id);
  }

  /** Stores a job exactly as given (a recorded job.json), at its own indexes, without publishing. */
  loadJob(job: JsonObject | Job): void {
    const namespace = String(job.Namespace ?? 'default');
    const key = jobKey(namespace, String(job.ID));
    const record = this.jobs.get(key) ?? { versions: new Map(), current: job, summaryIndex: Number(job.ModifyIndex) };
    record.current = job;
    record.versions.set(Number(job.Version ?? 0), job);
    this.jobs.set(key, record);
    this.raiseIndex(Number(job.ModifyIndex ?? 0), 'jobs', 'job_version', 'job_summary');
  }

  // Recorded state

  /**
   * Applies one recorded batch: objects are stored as their payloads say, the index jumps to the
   * batch's, and the batch is published as recorded (its exact line when `raw` is given).
   */
  applyRecordedBatch(batch: { Index: number; Events: readonly StreamEvent[]; raw?: string }): void {
    for (const event of batch.Events) this.applyRecordedEvent(event, batch.Events);
    this.lastIndex = Math.max(this.lastIndex, batch.Index);
    this.broker.publish(batch);
    for (const listener of [...this.changeListeners]) listener();
  }

  private applyRecordedEvent(event: StreamEvent, siblings: readonly StreamEvent[]): void {
    const object = event.Payload[event.Topic] as JsonObject | undefined;
    if (object === undefined) return;
    const index = event.Index;
    if (event.Topic === 'Job') {
      this.loadJob(object);
    } else if (event.Topic === 'Allocation') {
      const id = String(object.ID);
      this.allocs.set(id, { ...object });
      const record = this.jobs.get(jobKey(String(object.Namespace), String(object.JobID)));
      const job = record && jobAt(record, Number(object.AllocModifyIndex ?? index));
      if (job) this.allocJobs.set(id, job);
      this.raiseIndex(index, 'allocs', 'job_summary');
    } else if (event.Topic === 'Evaluation') {
      this.evals.set(String(object.ID), { ...object });
      this.raiseIndex(index, 'evals');
      // A purge publishes no Job event: only the job-deregister evaluation shows it.
      const purged = event.Type === 'JobDeregistered' && !siblings.some((e) => e.Topic === 'Job' && e.Key === object.JobID);
      const key = jobKey(String(object.Namespace), String(object.JobID));
      if (purged && this.jobs.get(key)?.current.Stop !== true) this.jobs.delete(key);
    } else if (event.Topic === 'Deployment') {
      this.deployments.set(String(object.ID), { ...object });
      this.raiseIndex(index, 'deployment');
    }
  }

  private raiseIndex(index: number, ...tables: Table[]): void {
    for (const table of tables) this.tableIndexes.set(table, Math.max(this.tableIndexes.get(table) ?? 0, index));
    this.lastIndex = Math.max(this.lastIndex, index);
  }

  // ---------------------------------------------------------------------------------------------

  protected requireJob(id: string, namespace: string): JsonObject {
    const record = this.jobs.get(jobKey(namespace, id));
    if (record === undefined) throw new NomadApiError(404, 'job not found');
    return record.current;
  }

  protected requireGroup(job: JsonObject, name: string | undefined): JsonObject {
    const groups = job.TaskGroups as JsonObject[];
    const group = name === undefined ? groups[0] : groups.find((g) => g.Name === name);
    if (group === undefined) throw new NomadApiError(400, `task group "${name ?? ''}" not found in job "${String(job.ID)}"`);
    return group;
  }

  protected requireAlloc(id: string): JsonObject {
    const alloc = this.allocs.get(id);
    if (alloc === undefined) throw new NomadApiError(404, 'alloc not found');
    return alloc;
  }

  protected tasksOf(alloc: JsonObject): JsonObject[] {
    const job = this.allocJobs.get(String(alloc.ID));
    const group = (job?.TaskGroups as JsonObject[] | undefined)?.find((g) => g.Name === alloc.TaskGroup);
    return (group?.Tasks as JsonObject[] | undefined) ?? [];
  }

}
