import { join } from 'node:path';
import type { ClusterState } from '../nomad/clusterState.js';
import type { FakeExecTarget } from './attachFakeExec.js';

/**
 * The exec targets of a FakeNomad cluster: an allocation's tasks are those of its task group in the
 * job it was placed from; it works in `<root>/<alloc id>`.
 */
export function clusterExecTargets(cluster: ClusterState, root: string): (allocId: string) => FakeExecTarget | undefined {
  return (allocId) => {
    const allocation = cluster.allocation(allocId);
    if (allocation === undefined) return undefined;
    const group = allocation.Job?.TaskGroups?.find((candidate) => candidate.Name === allocation.TaskGroup);
    return { tasks: (group?.Tasks ?? []).map((task) => task.Name), workdir: join(root, allocId) };
  };
}
