/**
 * Whether a job update replaces a group's allocations or updates them in place, as Nomad 1.1.2's
 * scheduler decides (scheduler/util.go tasksUpdated): tasks, their driver, user, config, env,
 * artifacts, templates, resources and ports, the group's disk, network, affinities and spreads,
 * and the meta each task is handed (job + group + task meta combined) replace; anything else
 * (another group's meta, the count, the update block) is applied in place.
 */
import type { JsonObject } from './jobSpec.js';
import { jsonEqual } from './objects.js';

const TASK_FIELDS = ['Driver', 'User', 'Config', 'Env', 'Artifacts', 'Vault', 'Templates'] as const;
const RESOURCE_FIELDS = ['CPU', 'Cores', 'MemoryMB', 'MemoryMaxMB', 'Devices', 'Networks'] as const;

const same = (a: unknown, b: unknown): boolean => jsonEqual(a ?? null, b ?? null);

function groupOf(job: JsonObject, name: string): JsonObject | undefined {
  return ((job.TaskGroups as JsonObject[] | null) ?? []).find((group) => group.Name === name);
}

/** Job.CombinedTaskMeta: the job's meta, overlaid by the group's, overlaid by the task's. */
function combinedMeta(job: JsonObject, group: JsonObject, task: JsonObject): JsonObject {
  return { ...(job.Meta as JsonObject | null), ...(group.Meta as JsonObject | null), ...(task.Meta as JsonObject | null) };
}

/** True when moving an allocation of `group` from job version `from` to `to` needs a new allocation. */
export function tasksUpdated(from: JsonObject, to: JsonObject, groupName: string): boolean {
  const a = groupOf(from, groupName);
  const b = groupOf(to, groupName);
  if (a === undefined || b === undefined) return true;
  const tasksA = (a.Tasks as JsonObject[] | null) ?? [];
  const tasksB = (b.Tasks as JsonObject[] | null) ?? [];
  if (tasksA.length !== tasksB.length) return true;
  for (const field of ['EphemeralDisk', 'Networks', 'Affinities', 'Spreads', 'Consul'] as const) if (!same(a[field], b[field])) return true;
  if (!same(from.Affinities, to.Affinities) || !same(from.Spreads, to.Spreads)) return true;
  for (const taskA of tasksA) {
    const taskB = tasksB.find((candidate) => candidate.Name === taskA.Name);
    if (taskB === undefined) return true;
    if (TASK_FIELDS.some((field) => !same(taskA[field], taskB[field]))) return true;
    if (!same(combinedMeta(from, a, taskA), combinedMeta(to, b, taskB))) return true;
    const resourcesA = (taskA.Resources as JsonObject | null) ?? {};
    const resourcesB = (taskB.Resources as JsonObject | null) ?? {};
    if (RESOURCE_FIELDS.some((field) => !same(resourcesA[field], resourcesB[field]))) return true;
  }
  return false;
}
