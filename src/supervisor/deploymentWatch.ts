import type { EvaluationOutcome } from '../../machines/evaluationOutcome.js';
import type { HealthOutcome } from '../../machines/allocationHealthTypes.js';
import type { Deployment } from '../nomad/types.js';

/**
 * Judges one job version's deployment from Warden's own allocation verdicts: it succeeds once every
 * allocation the deployment wants (its task groups' DesiredTotal) has been judged healthy, and fails
 * at the first allocation judged unhealthy, at a placement failure, or when Nomad ends the
 * deployment failed or cancelled (the progress deadline, a newer version). Nomad's own health flags
 * are never read.
 */

export interface UnhealthyAllocation {
  allocId: string;
  /** "<job>.<group>[<index>]" when known. */
  name: string | undefined;
  at: number;
  /** Per task, why it kept the allocation from being healthy. */
  reasons: Readonly<Record<string, string>>;
}

export type DeploymentResult =
  | { ok: true; jobId: string; version: number; deploymentId: string; healthy: string[] }
  | {
      ok: false;
      jobId: string;
      version: number;
      deploymentId: string | undefined;
      /** One line saying why; the details follow in `unhealthy` / `evaluation`. */
      reason: string;
      unhealthy: UnhealthyAllocation[];
      evaluation?: EvaluationOutcome;
    };

const ENDED_BADLY = new Set(['failed', 'cancelled']);

export class DeploymentWatch {
  private deployment: Deployment | undefined;
  /** Verdicts of the job's allocations by allocation id, with the deployment that placed each. */
  private readonly healthy = new Map<string, string>();
  private readonly unhealthy = new Map<string, UnhealthyAllocation & { deploymentId: string }>();
  private result: DeploymentResult | undefined;

  constructor(
    readonly jobId: string,
    readonly namespace: string,
    readonly version: number,
  ) {}

  get deploymentId(): string | undefined {
    return this.deployment?.ID;
  }

  get settled(): DeploymentResult | undefined {
    return this.result;
  }

  /** A Deployment of any job; returns the result once settled. */
  onDeployment(deployment: Deployment): DeploymentResult | undefined {
    if (this.result || deployment.JobID !== this.jobId || deployment.JobVersion !== this.version) return this.result;
    if ((deployment.Namespace || 'default') !== this.namespace) return this.result;
    if (this.deployment && this.deployment.ID === deployment.ID && deployment.ModifyIndex < this.deployment.ModifyIndex) {
      return this.result;
    }
    this.deployment = deployment;
    if (ENDED_BADLY.has(deployment.Status)) {
      return this.fail(`Deployment ${deployment.Status}: ${deployment.StatusDescription}`);
    }
    return this.judge();
  }

  /**
   * An allocation verdict of the job; `deploymentId` says which deployment placed the allocation.
   * Verdicts that arrive before their deployment is known are kept for when it is.
   */
  onVerdict(allocId: string, deploymentId: string | undefined, name: string | undefined, outcome: HealthOutcome): DeploymentResult | undefined {
    if (this.result || !deploymentId || 'stopped' in outcome) return this.result;
    if (outcome.healthy) this.healthy.set(allocId, deploymentId);
    else this.unhealthy.set(allocId, { allocId, name, at: outcome.at, reasons: outcome.reasons, deploymentId });
    return this.judge();
  }

  /** A terminal evaluation of the job: placement failures within the deployment fail it. */
  onEvaluation(outcome: EvaluationOutcome, deploymentId: string | undefined): DeploymentResult | undefined {
    if (this.result || outcome.ok || outcome.failures.length === 0 || !deploymentId || deploymentId !== this.deployment?.ID) {
      return this.result;
    }
    const groups = outcome.failures.map((failure) => `"${failure.group}"`).join(', ');
    return this.fail(`could not place task group${outcome.failures.length === 1 ? '' : 's'} ${groups}`, outcome);
  }

  private wanted(): number {
    return Object.values(this.deployment?.TaskGroups ?? {}).reduce((sum, group) => sum + group.DesiredTotal, 0);
  }

  private judge(): DeploymentResult | undefined {
    const deployment = this.deployment;
    if (!deployment) return undefined;
    const unhealthy = [...this.unhealthy.values()].filter((alloc) => alloc.deploymentId === deployment.ID).length;
    if (unhealthy > 0) return this.fail(`${unhealthy} allocation${unhealthy === 1 ? '' : 's'} unhealthy`);
    const healthy = [...this.healthy].filter(([, placedBy]) => placedBy === deployment.ID).map(([allocId]) => allocId);
    if (this.wanted() === 0 || healthy.length < this.wanted()) return undefined;
    this.result = { ok: true, jobId: this.jobId, version: this.version, deploymentId: deployment.ID, healthy };
    return this.result;
  }

  private fail(reason: string, evaluation?: EvaluationOutcome): DeploymentResult {
    this.result = {
      ok: false,
      jobId: this.jobId,
      version: this.version,
      deploymentId: this.deployment?.ID,
      reason,
      unhealthy: [...this.unhealthy.values()]
        .filter((alloc) => alloc.deploymentId === this.deployment?.ID)
        .map(({ deploymentId: _, ...alloc }) => alloc),
      ...(evaluation ? { evaluation } : {}),
    };
    return this.result;
  }
}
