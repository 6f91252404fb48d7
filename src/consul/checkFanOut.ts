/**
 * One Consul answer for the whole datacenter, fanned out to the allocations that are judged by
 * their checks: each answer is grouped by allocation once, and only an allocation whose own checks
 * changed is told. The cost of an answer is one pass over its checks plus one comparison per
 * followed allocation; the requests to Consul do not depend on how many allocations there are.
 */
import type { CheckView } from '../../machines/allocationHealthTypes.js';
import type { TaskGroup } from '../nomad/types.js';
import type { ConsulHealthCheck } from './client.js';
import { checkViewsFor, checksByAllocation, sameAllocationChecks, type AllocationCheck, type AllocationWorkloads } from './checkViews.js';

/** Where the views go (the health registry's updateChecks), with the time the answer holding them was seen. */
export type ChecksListener = (allocationId: string, checks: readonly CheckView[], seenAt: number | undefined) => void;

export class ConsulCheckFanOut {
  private latest = new Map<string, AllocationCheck[]>();
  private readonly followed = new Map<string, AllocationWorkloads>();

  constructor(private readonly listener: ChecksListener) {}

  /** Number of allocations followed. */
  get size(): number {
    return this.followed.size;
  }

  /** Follows an allocation of `group`; returns its check views as of the latest answer. */
  follow(allocationId: string, group: Pick<TaskGroup, 'Name' | 'Tasks'>): CheckView[] {
    const workloads = { group: group.Name, tasks: (Array.isArray(group.Tasks) ? group.Tasks : []).map((task) => task.Name) };
    this.followed.set(allocationId, workloads);
    return checkViewsFor(this.latest.get(allocationId) ?? [], workloads);
  }

  forget(allocationId: string): void {
    this.followed.delete(allocationId);
  }

  /** A new answer: every check of the datacenter, seen at `seenAt` (default: when the listener is told). */
  update(checks: readonly ConsulHealthCheck[], seenAt?: number): void {
    const next = checksByAllocation(checks);
    const previous = this.latest;
    this.latest = next;
    for (const [allocationId, workloads] of this.followed) {
      const mine = next.get(allocationId);
      if (sameAllocationChecks(previous.get(allocationId), mine)) continue;
      this.listener(allocationId, checkViewsFor(mine ?? [], workloads), seenAt);
    }
  }
}
