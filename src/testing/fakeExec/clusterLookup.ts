import { join } from 'node:path';
import type { ClusterState } from '../nomad/clusterState.js';
import { uuidDigits, canonicalUuid } from '../nomad/uuidIndex.js';
import type { FakeExecRefusal, FakeExecTarget } from './attachFakeExec.js';

/**
 * The exec targets of a FakeNomad cluster: an allocation's tasks are those of its task group in the
 * job it was placed from, in the states its client last reported; it works in `<root>/<alloc id>`.
 * An ID that is no UUID is the server's lookup error, as Nomad answers it.
 */
export function clusterExecTargets(cluster: ClusterState, root: string): (allocId: string) => FakeExecTarget | FakeExecRefusal | undefined {
  return (allocId) => {
    const parsed = uuidDigits(allocId, true);
    if ('error' in parsed && !cluster.hasObject(allocId)) return { code: 1011, reason: `alloc lookup failed: index error: ${parsed.error}` };
    const key = cluster.hasObject(allocId) || !('digits' in parsed) || parsed.digits.length !== 32 ? allocId : canonicalUuid(parsed.digits);
    const allocation = cluster.allocation(key);
    if (allocation === undefined) return undefined;
    const group = allocation.Job?.TaskGroups?.find((candidate) => candidate.Name === allocation.TaskGroup);
    const states = Object.fromEntries(Object.entries(allocation.TaskStates ?? {}).map(([task, state]) => [task, String(state.State)]));
    return { tasks: (group?.Tasks ?? []).map((task) => task.Name), workdir: join(root, key), states };
  };
}
