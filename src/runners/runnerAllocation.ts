/**
 * A runner's allocation as the runner machine reads it: pending (with its tasks' trouble, if any),
 * running or ended (with why, in Nomad's words), whether its task was OOM-killed last, and the ports
 * mapped from the outside (`exposedPort` → `host:port`).
 */
import type { MappedPort, RunnerAllocation } from '../../machines/runnerTypes.js';
import type { Allocation, AllocationListStub } from '../nomad/types.js';
import { RUNNER_TASK } from './poseidonFormat.js';
import { failureMessage, oomKilled, pendingTrouble } from './taskTrouble.js';

/** AllocatedResources.Shared.Ports (Nomad back-fills them from the networks), else the networks' dynamic ports. */
export function mappedPorts(allocation: Pick<Allocation, 'AllocatedResources'>): MappedPort[] {
  const shared = allocation.AllocatedResources?.Shared;
  const ports = shared?.Ports ?? [];
  if (ports.length > 0) return ports.map((port) => ({ exposedPort: port.To ?? 0, hostAddress: `${port.HostIP ?? ''}:${port.Value ?? 0}` }));
  return (shared?.Networks ?? []).flatMap((network) =>
    [...(network.ReservedPorts ?? []), ...(network.DynamicPorts ?? [])].map((port) => ({ exposedPort: port.To ?? 0, hostAddress: `${network.IP ?? ''}:${port.Value ?? 0}` })),
  );
}

function endReason(allocation: Allocation | AllocationListStub): string | undefined {
  switch (allocation.ClientStatus) {
    case 'failed':
      return `the allocation failed: ${failureMessage(allocation as Allocation)}`;
    case 'lost':
      return `the allocation was lost${allocation.DesiredDescription ? `: ${allocation.DesiredDescription}` : ''}`;
    case 'complete':
      return 'the allocation completed';
    default:
      break;
  }
  if (allocation.DesiredStatus === 'stop' || allocation.DesiredStatus === 'evict') {
    return `the allocation was stopped${allocation.DesiredDescription ? `: ${allocation.DesiredDescription}` : ''}`;
  }
  return undefined;
}

/** The runner's view of an allocation update received at `at` (clock time). */
export function runnerAllocation(allocation: Allocation | AllocationListStub, at: number): RunnerAllocation {
  const reason = endReason(allocation);
  // `unknown` (a disconnected node, Nomad 1.3+) is not running as far as a claim is concerned.
  const status = reason !== undefined ? 'ended' : allocation.ClientStatus === 'running' ? 'running' : 'pending';
  // A list stub has no task states: nothing to say of its tasks.
  const tasks = 'TaskStates' in allocation ? (allocation as Pick<Allocation, 'TaskStates'>) : { TaskStates: null };
  const trouble = status === 'pending' ? pendingTrouble(tasks) : undefined;
  return {
    allocId: allocation.ID,
    createIndex: allocation.CreateIndex ?? 0,
    modifyIndex: allocation.ModifyIndex,
    status,
    ...(reason === undefined ? {} : { reason }),
    ...(trouble === undefined ? {} : { trouble }),
    ...(oomKilled(tasks, RUNNER_TASK) ? { oomKilled: true } : {}),
    ports: mappedPorts(allocation),
    at,
  };
}
