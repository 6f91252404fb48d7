/**
 * What Nomad derives from the tables: a job's status and summary from its allocations and
 * evaluations, whether a registration changes the spec, the EnforceIndex check, and which job
 * version an allocation ran at an index.
 */
import { NomadApiError } from './errors.js';
import type { JsonObject } from './jobSpec.js';
import { jsonEqual } from './objects.js';

export interface JobRecord {
  versions: Map<number, JsonObject>;
  current: JsonObject;
  summaryIndex: number;
}

export function isClientTerminal(alloc: JsonObject): boolean {
  return alloc.ClientStatus === 'complete' || alloc.ClientStatus === 'failed' || alloc.ClientStatus === 'lost';
}

export function matchesNamespace(object: JsonObject, namespace: string | undefined): boolean {
  return namespace === '*' || object.Namespace === (namespace ?? 'default');
}

export function byCreateIndex(a: JsonObject, b: JsonObject): number {
  return Number(a.CreateIndex) - Number(b.CreateIndex);
}

/** The job version in force at a raft index. */
export function jobAt(record: JobRecord, index: number): JsonObject | undefined {
  const versions = [...record.versions.values()].filter((v) => Number(v.JobModifyIndex) <= index);
  versions.sort((a, b) => Number(b.JobModifyIndex) - Number(a.JobModifyIndex));
  return versions[0] ?? record.current;
}

const VOLATILE = new Set(['Status', 'StatusDescription', 'Stable', 'Version', 'SubmitTime', 'CreateIndex', 'ModifyIndex', 'JobModifyIndex', 'Stop']);

export function specChanged(previous: JsonObject, next: JsonObject): boolean {
  const spec = (job: JsonObject): JsonObject => {
    const fields: JsonObject = {};
    for (const key in job) if (!VOLATILE.has(key)) fields[key] = job[key];
    return fields;
  };
  return !jsonEqual(spec(previous), spec(next));
}

/** EnforceIndex check of Job.Register (nomad/job_endpoint.go), Nomad's 1.1.2 texts. */
export function enforceIndex(existing: JsonObject | undefined, wanted: number): void {
  const prefix = 'Enforcing job modify index';
  if (existing === undefined) {
    if (wanted !== 0) throw new NomadApiError(500, `${prefix} ${wanted}: job does not exist`);
    return;
  }
  if (wanted === 0) throw new NomadApiError(500, `${prefix} 0: job already exists`);
  if (Number(existing.JobModifyIndex) !== wanted) {
    throw new NomadApiError(500, `${prefix} ${wanted}: job exists with conflicting job modify index: ${String(existing.JobModifyIndex)}`);
  }
}

/** JobSummary: allocation counts per group by client status (nomad/state job summaries). */
export function jobSummary(job: JsonObject, allocs: Iterable<JsonObject>, summaryIndex: number | undefined): JsonObject {
  const summary: Record<string, Record<string, number>> = {};
  for (const group of job.TaskGroups as JsonObject[]) {
    summary[String(group.Name)] = { Complete: 0, Failed: 0, Lost: 0, Queued: 0, Running: 0, Starting: 0 };
  }
  for (const alloc of allocs) {
    if (alloc.JobID !== job.ID || alloc.Namespace !== job.Namespace) continue;
    const counts = summary[String(alloc.TaskGroup)];
    const key = { pending: 'Starting', running: 'Running', complete: 'Complete', failed: 'Failed', lost: 'Lost' }[String(alloc.ClientStatus)];
    if (counts && key) counts[key] = (counts[key] ?? 0) + 1;
  }
  return {
    Children: { Dead: 0, Pending: 0, Running: 0 }, CreateIndex: job.CreateIndex, JobID: job.ID,
    ModifyIndex: summaryIndex ?? job.ModifyIndex, Namespace: job.Namespace, Summary: summary,
  };
}

/** Job status from its allocations and evaluations (nomad/state/state_store.go getJobStatus). */
export function jobStatus(job: JsonObject, allocs: readonly JsonObject[], evals: readonly JsonObject[]): string {
  if (allocs.some((a) => a.DesiredStatus === 'run' && !isClientTerminal(a))) return 'running';
  if (evals.some((e) => e.Status === 'pending' || e.Status === 'blocked')) return 'pending';
  if (job.Stop || allocs.length > 0 || (job.Type !== 'service' && evals.length > 0)) return 'dead';
  return 'pending';
}
