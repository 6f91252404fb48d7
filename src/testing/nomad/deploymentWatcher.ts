/**
 * The fake's deployment watcher, acting by itself (FakeNomad `acting`; nomad/deploymentwatcher):
 * `delayMs` (1,250 ms, as measured on Nomad 1.1.2: its batching of the evaluations it creates) after
 * an allocation of a running deployment reports its health,
 * - every group healthy (DesiredTotal allocations, canaries promoted): the deployment successful and
 *   the job version stable, through a deployment-watcher evaluation (ClusterState.setDeploymentStatus);
 * - some healthy and older allocations still to replace: a deployment-watcher evaluation, so the
 *   scheduler goes on with the rollout;
 * - an allocation unhealthy: with a progress deadline, marked for rescheduling (DesiredTransition
 *   Reschedule) with a deployment-watcher evaluation in the same write; without one, the deployment
 *   failed.
 * Not played: progress deadlines running out, auto-revert, auto-promote.
 */
import type { Allocation, Deployment } from '../../nomad/types.js';
import type { ClusterState } from './clusterState.js';
import type { JsonObject } from './jobSpec.js';
import type { Schedule } from './actingClient.js';

export class DeploymentWatcher {
  /** Deployments with a look scheduled. */
  private readonly scheduled = new Set<string>();
  /** Health verdicts already acted on: allocation ID → Healthy. */
  private readonly seen = new Map<string, boolean>();

  constructor(
    private readonly cluster: ClusterState,
    private readonly delayMs: number,
    private readonly schedule: Schedule,
  ) {}

  onAllocation(alloc: Allocation): void {
    const healthy = alloc.DeploymentStatus?.Healthy;
    if (typeof healthy !== 'boolean' || !alloc.DeploymentID || this.seen.get(alloc.ID) === healthy) return;
    this.seen.set(alloc.ID, healthy);
    const id = alloc.DeploymentID;
    if (this.scheduled.has(id)) return;
    this.scheduled.add(id);
    this.schedule(this.delayMs, () => {
      this.scheduled.delete(id);
      this.look(id);
    });
  }

  clear(): void {
    this.scheduled.clear();
  }

  private look(id: string): void {
    const deployment = this.cluster.deployment(id);
    if (deployment?.Status !== 'running') return;
    const allocs = this.cluster.listAllocations({ namespace: deployment.Namespace ?? 'default', jobId: deployment.JobID })
      .map((stub) => this.cluster.allocation(String(stub.ID))!)
      .filter((a) => a.DeploymentID === id);
    const unhealthy = allocs.filter((a) => a.DeploymentStatus?.Healthy === false && a.DesiredStatus === 'run' && a.DesiredTransition?.Reschedule !== true);
    if (unhealthy.length > 0) {
      this.unhealthy(deployment, unhealthy);
      return;
    }
    if (complete(deployment)) {
      this.cluster.setDeploymentStatus(id, 'successful');
      return;
    }
    const job = this.cluster.job(deployment.JobID, { namespace: deployment.Namespace ?? 'default' });
    if (job !== undefined && job.Version === deployment.JobVersion) {
      this.cluster.createEvaluation(deployment.JobID, { TriggeredBy: 'deployment-watcher', DeploymentID: id }, { namespace: deployment.Namespace ?? 'default', type: 'AllocationUpdateDesiredStatus' });
    }
  }

  private unhealthy(deployment: Deployment, allocs: readonly Allocation[]): void {
    const groups = deployment.TaskGroups as unknown as Record<string, JsonObject>;
    const failing = allocs.filter((a) => Number(groups[a.TaskGroup]?.ProgressDeadline ?? 0) === 0);
    if (failing.length > 0) {
      this.cluster.setDeploymentStatus(deployment.ID, 'failed', 'Failed due to unhealthy allocations');
      return;
    }
    this.cluster.batch(() => {
      for (const alloc of allocs) {
        this.cluster.patchAllocation(alloc.ID, { DesiredTransition: { ForceReschedule: null, Migrate: null, Reschedule: true } }, 'AllocationUpdateDesiredStatus');
      }
      this.cluster.createEvaluation(deployment.JobID, { TriggeredBy: 'deployment-watcher', DeploymentID: deployment.ID }, { namespace: deployment.Namespace ?? 'default', type: 'AllocationUpdateDesiredStatus' });
    });
  }
}

/** Every group has its allocations healthy, and its canaries promoted. */
function complete(deployment: Deployment): boolean {
  return Object.values(deployment.TaskGroups as unknown as Record<string, JsonObject>).every((state) => {
    const canaries = Number(state.DesiredCanaries ?? 0);
    return Number(state.HealthyAllocs) >= Number(state.DesiredTotal) && (canaries === 0 || state.Promoted === true);
  });
}
