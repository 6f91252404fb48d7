/**
 * Equality of compact views, so an allocation's machine only sees updates that change what it
 * judges. Most allocation events (placement, desired-transition bookkeeping, deployment counters,
 * task events that do not move a state) leave the view as it was.
 */
import type { AllocationView, CheckView, TaskView } from '../../machines/allocationHealthTypes.js';

function sameTask(a: TaskView, b: TaskView): boolean {
  return (
    a.state === b.state &&
    a.failed === b.failed &&
    a.restarts === b.restarts &&
    a.startedAt === b.startedAt &&
    a.finishedAt === b.finishedAt &&
    a.hook === b.hook &&
    a.sidecar === b.sidecar
  );
}

export function sameAllocationView(a: AllocationView, b: AllocationView): boolean {
  if (a === b) return true;
  if (a.clientStatus !== b.clientStatus || a.desiredStatus !== b.desiredStatus) return false;
  let count = 0;
  for (const name in a.tasks) {
    const other = b.tasks[name];
    if (other === undefined || !sameTask(a.tasks[name] as TaskView, other)) return false;
    count += 1;
  }
  for (const _ in b.tasks) count -= 1;
  return count === 0;
}

export function sameChecks(a: readonly CheckView[], b: readonly CheckView[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((check, i) => {
    const other = b[i] as CheckView;
    return check.task === other.task && check.service === other.service && check.name === other.name && check.status === other.status;
  });
}
