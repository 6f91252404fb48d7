/**
 * Whether an allocation seen for the first time was moved into its deployment by an in-place
 * update, and since when: Nomad's client watches such an allocation again from the move
 * (client/allocrunner/health_hook.go Update), so a supervisor that starts after the move must not
 * take its old start for the new deployment's.
 */
import type { NomadClient } from '../nomad/client.js';
import type { Allocation, Deployment } from '../nomad/types.js';
import { isNanoTime } from '../health/nomadTime.js';
import { BoundedHistory } from '../boundedHistory.js';

/** The update that moved an allocation into a deployment: the deployment, and when (its ModifyTime). */
export type MovingUpdate = Pick<Allocation, 'DeploymentID' | 'ModifyTime'>;

export class InPlaceMoves {
  /** One read per deployment however many of its allocations ask; null: read again (the last read failed). */
  private readonly reads: BoundedHistory<Promise<Deployment> | null>;

  constructor(
    private readonly nomad: Pick<NomadClient, 'getDeployment'>,
    capacity: number,
  ) {
    this.reads = new BoundedHistory(capacity);
  }

  /**
   * The move that put `allocation` into its deployment, or undefined when it was placed there (or
   * the deployment cannot be read). Placed before its deployment existed and rewritten by the server
   * since (generic_sched.go moves in-place updates into the deployment the same plan creates). The
   * move's time is the deployment's CreateTime where Nomad writes one, else the allocation's
   * ModifyTime: the move itself while it is the latest write, else later (a verdict may then come
   * late, never early).
   */
  async movedBy(allocation: Allocation): Promise<MovingUpdate | undefined> {
    if (!this.mayHaveMoved(allocation)) return undefined;
    const deploymentId = allocation.DeploymentID as string;
    const deployment = await this.read(deploymentId, allocation.Namespace).catch(() => undefined);
    if (deployment === undefined || !(deployment.CreateIndex > (allocation.CreateIndex as number))) return undefined;
    return { DeploymentID: deploymentId, ModifyTime: isNanoTime(deployment.CreateTime) ? deployment.CreateTime : allocation.ModifyTime };
  }

  /** Whether the server rewrote the allocation (in a deployment) since placing it: only then can it have been moved in place. */
  mayHaveMoved(allocation: Allocation): boolean {
    const { DeploymentID: deploymentId, CreateIndex: created, AllocModifyIndex: rewritten } = allocation;
    return Boolean(deploymentId) && created !== undefined && rewritten !== undefined && rewritten > created;
  }

  private read(deploymentId: string, namespace: string | undefined): Promise<Deployment> {
    const known = this.reads.get(deploymentId);
    if (known) return known;
    const read = this.nomad.getDeployment(deploymentId, namespace ? { namespace } : {}).then((response) => response.body);
    this.reads.set(deploymentId, read);
    read.catch(() => {
      if (this.reads.get(deploymentId) === read) this.reads.set(deploymentId, null);
    });
    return read;
  }
}
