import type { EvaluationOutcome } from '../../machines/evaluationOutcome.js';
import { NEWEST_NOMAD_RULES, type NomadRules } from '../../machines/nomadRules.js';
import type { VerdictOutcome } from '../intake/types.js';
import type { Deployment, DeploymentState } from '../nomad/types.js';

/**
 * One job version's deployment, as a deploy gate reports it. Nomad's own deployment is the source of
 * truth for how it ended: its status and its task groups' counts (Nomad's deployment watcher,
 * nomad/deploymentwatcher/deployment_watcher.go, has the final word, and a gate never contradicts
 * it). Warden's own allocation verdicts give the reasons: the allocations it judged unhealthy, each
 * with Nomad's per-task explanation.
 *
 * - Ended: `successful` → ok; `failed` or `cancelled` → not ok, with Nomad's StatusDescription as the
 *   reason (the rule says which of Nomad's rules ended it).
 * - Awaiting promotion: still running, every group with canaries has as many healthy canaries as
 *   it wants (Nomad's counts) and waits for a manual promotion → ok with `awaitingPromotion`.
 * - `failFast`: the first allocation of the deployment Warden judges unhealthy, or an evaluation
 *   that could not place a group, ends the gate at once (an explicit choice: Nomad may still go on).
 *
 * Once Nomad's deployment has ended, the result waits for Warden's verdicts of the deployment's
 * allocations (`settle`), so that a gate started before, during or after the deployment reports the
 * same allocations with the same reasons.
 */

export interface UnhealthyAllocation {
  allocId: string;
  /** "<job>.<group>[<index>]" when known. */
  name: string | undefined;
  at: number;
  /** Per task, why it kept the allocation from being healthy. */
  reasons: Readonly<Record<string, string>>;
  /** Nomad's recorded verdict, taken where the kept history could not decide (its reasons as far as its events still hold them). */
  basis?: 'nomad';
}

/**
 * What ended a failed deployment: Nomad's rules `progress-deadline` ("Failed due to progress
 * deadline") and `unhealthy-allocations` ("Failed due to unhealthy allocations"), or `nomad` for any
 * other end Nomad gave it (cancelled, marked failed); `fail-fast` and `placement` the gate's own
 * option; `nothing-to-judge` a job version Nomad runs no deployment for.
 */
export type DeploymentFailureRule = 'progress-deadline' | 'unhealthy-allocations' | 'nomad' | 'fail-fast' | 'placement' | 'nothing-to-judge';

/** An allocation of the deployment Warden did not judge, and why (Nomad's own verdict stands alone for it). */
export interface UnjudgedAllocation {
  allocId: string;
  name: string | undefined;
  reason: string;
}

export type DeploymentResult =
  | {
      ok: true;
      jobId: string;
      version: number;
      deploymentId: string;
      healthy: string[];
      /** Set when every canary is healthy and the deployment waits for a manual promotion. */
      awaitingPromotion?: true;
      unjudged?: UnjudgedAllocation[];
    }
  | {
      ok: false;
      jobId: string;
      version: number;
      deploymentId: string | undefined;
      /** One line saying why; the details follow in `unhealthy` / `evaluation`. */
      reason: string;
      rule: DeploymentFailureRule;
      unhealthy: UnhealthyAllocation[];
      evaluation?: EvaluationOutcome;
      unjudged?: UnjudgedAllocation[];
    };

export interface DeploymentWatchOptions {
  /** End at the first unhealthy allocation or placement failure instead of Nomad's own end. */
  failFast?: boolean;
  /** The rules of the cluster's Nomad release, once known (default: today's Nomad). */
  rules?: () => NomadRules | undefined;
}

/** A verdict of one of the job's allocations, as the watch keeps it. */
interface Verdict {
  deploymentId: string;
  outcome: VerdictOutcome;
  name: string | undefined;
}

type Ending = { kind: 'successful' } | { kind: 'awaitingPromotion' } | { kind: 'failed'; rule: DeploymentFailureRule; reason: string; evaluation?: EvaluationOutcome };

const FAILED = new Set(['failed', 'cancelled']);

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/**
 * Nomad's counts: every group with canaries has them all healthy, and Nomad will not promote them
 * itself. deployment_watcher.go autoPromoteDeployment promotes only when every group with canaries
 * has auto_promote (before NomadRules.mixedCanaryAutoPromote: every group, a rolling one too), so a
 * group without it leaves the whole deployment to a person.
 */
function awaitingPromotion(groups: readonly DeploymentState[], rules: NomadRules): boolean {
  const canaried = groups.filter((state) => state.DesiredCanaries > 0 && !state.Promoted);
  if (canaried.length === 0 || !canaried.every((state) => state.HealthyAllocs >= state.DesiredCanaries)) return false;
  const deciding = rules.mixedCanaryAutoPromote ? groups.filter((state) => state.DesiredCanaries > 0) : groups;
  return !deciding.every((state) => state.AutoPromote);
}

function failureRule(description: string | undefined): DeploymentFailureRule {
  if (description?.includes('progress deadline')) return 'progress-deadline';
  if (description?.includes('unhealthy allocations')) return 'unhealthy-allocations';
  return 'nomad';
}

/** An allocation of the deployment Warden is still judging, and where its health machine is. */
export interface StillJudged {
  readonly allocId: string;
  /** Its machine's state, or why it has none yet (its job being looked up...). */
  readonly state: string;
}

export class DeploymentWatch {
  private deployment: Deployment | undefined;
  /** Why Nomad's record of the deployment could not be read (retried meanwhile), for a gate that gives up. */
  readProblem: string | undefined;
  private readonly verdicts = new Map<string, Verdict>();
  private readonly unjudged = new Map<string, UnjudgedAllocation & { deploymentId: string }>();
  private ending: Ending | undefined;

  constructor(
    readonly jobId: string,
    readonly namespace: string,
    readonly version: number,
    private readonly options: DeploymentWatchOptions = {},
  ) {}

  get deploymentId(): string | undefined {
    return this.deployment?.ID;
  }

  /** Set once Nomad (or the fail-fast option) has ended the deployment: the result waits only for verdicts. */
  get ended(): boolean {
    return this.ending !== undefined;
  }

  /** A Deployment of any job: the version's, newest write wins. */
  onDeployment(deployment: Deployment): void {
    if (this.ending || deployment.JobID !== this.jobId || deployment.JobVersion !== this.version) return;
    if ((deployment.Namespace || 'default') !== this.namespace) return;
    const previous = this.deployment;
    if (previous?.ID === deployment.ID && deployment.ModifyIndex < previous.ModifyIndex) return;
    // A newer deployment of the same version (the job registered again) replaces the older one.
    if (previous !== undefined && previous.ID !== deployment.ID && deployment.CreateIndex < previous.CreateIndex) return;
    this.deployment = deployment;
    if (deployment.Status === 'successful') this.ending = { kind: 'successful' };
    else if (FAILED.has(deployment.Status)) {
      const reason = `Deployment ${deployment.Status}: ${deployment.StatusDescription}`;
      this.ending = { kind: 'failed', rule: failureRule(deployment.StatusDescription), reason };
    } else if (deployment.Status === 'running' && awaitingPromotion(Object.values(deployment.TaskGroups ?? {}), this.options.rules?.() ?? NEWEST_NOMAD_RULES)) this.ending = { kind: 'awaitingPromotion' };
  }

  /** A verdict of one of the job's allocations; `deploymentId` says which deployment it was judged for. */
  onVerdict(allocId: string, deploymentId: string | undefined, name: string | undefined, outcome: VerdictOutcome): void {
    if (!deploymentId) return;
    this.verdicts.set(allocId, { deploymentId, outcome, name });
    // Its kept history could not decide, and Nomad recorded nothing: named among the unjudged, with why.
    if ('undetermined' in outcome) this.onUnjudged(allocId, deploymentId, name, outcome.reason);
    if (this.options.failFast && !this.ending && 'healthy' in outcome && !outcome.healthy && deploymentId === this.deployment?.ID) {
      this.ending = { kind: 'failed', rule: 'fail-fast', reason: `${plural(this.unhealthy().length, 'allocation')} unhealthy` };
    }
  }

  /** An allocation of the job Warden does not judge, with why. */
  onUnjudged(allocId: string, deploymentId: string | undefined, name: string | undefined, reason: string): void {
    if (deploymentId) this.unjudged.set(allocId, { allocId, name, reason, deploymentId });
  }

  /** A terminal evaluation of the job: with failFast, a group it could not place ends the gate. */
  onEvaluation(outcome: EvaluationOutcome, deploymentId: string | undefined): void {
    if (this.ending || !this.options.failFast || outcome.ok || outcome.failures.length === 0) return;
    if (!deploymentId || deploymentId !== this.deployment?.ID) return;
    const groups = outcome.failures.map((failure) => `"${failure.group}"`).join(', ');
    this.ending = { kind: 'failed', rule: 'placement', reason: `could not place task group${outcome.failures.length === 1 ? '' : 's'} ${groups}`, evaluation: outcome };
  }

  /**
   * The result, once the deployment has ended and Warden has judged its allocations (`undecided`:
   * how many of them it still judges).
   */
  result(undecided: number | (() => number)): DeploymentResult | undefined {
    const { ending, deployment } = this;
    if (ending === undefined || deployment === undefined) return undefined;
    const gateOwn = ending.kind === 'failed' && (ending.rule === 'fail-fast' || ending.rule === 'placement');
    // Given as a function, counted only once the deployment has ended (counting looks at every allocation being judged).
    if (!gateOwn && (typeof undecided === 'number' ? undecided : undecided()) > 0) return undefined;
    const unjudged = [...this.unjudged.values()]
      .filter((alloc) => alloc.deploymentId === deployment.ID)
      .map(({ deploymentId: _d, ...alloc }) => alloc)
      .sort((a, b) => a.allocId.localeCompare(b.allocId));
    const base = { jobId: this.jobId, version: this.version, ...(unjudged.length > 0 ? { unjudged } : {}) };
    if (ending.kind !== 'failed') {
      const healthy = [...this.verdicts]
        .filter(([, v]) => v.deploymentId === deployment.ID && 'healthy' in v.outcome && v.outcome.healthy)
        .map(([id]) => id)
        .sort();
      return { ok: true, ...base, deploymentId: deployment.ID, healthy, ...(ending.kind === 'awaitingPromotion' ? { awaitingPromotion: true as const } : {}) };
    }
    const unhealthy = this.unhealthy();
    const headline = ending.rule === 'fail-fast' || unhealthy.length === 0 ? ending.reason : `${ending.reason}; ${plural(unhealthy.length, 'allocation')} unhealthy`;
    return { ok: false, ...base, deploymentId: deployment.ID, reason: headline, rule: ending.rule, unhealthy, ...(ending.evaluation ? { evaluation: ending.evaluation } : {}) };
  }

  /**
   * What the result still waits for, in a few words: for a gate that gives up (--timeout), so that
   * the user can tell a slow Nomad from a stuck judgement.
   */
  waitingFor(stillJudged: (deploymentId: string) => readonly StillJudged[]): string {
    const { deployment, ending } = this;
    if (deployment === undefined) {
      const read = this.readProblem === undefined ? '' : ` (reading the job's deployments: ${this.readProblem})`;
      return `no deployment of version ${this.version} seen${read}`;
    }
    const id = deployment.ID.slice(0, 8);
    if (ending === undefined) return `deployment ${id} still ${deployment.Status}${deployment.StatusDescription ? `: ${deployment.StatusDescription}` : ''}`;
    const judged = stillJudged(deployment.ID);
    const ended = ending.kind === 'awaitingPromotion' ? 'waits for a promotion' : `ended ${deployment.Status}`;
    if (judged.length === 0) return `deployment ${id} ${ended}`;
    const shown = judged.slice(0, 5).map((alloc) => `${alloc.allocId.slice(0, 8)} (${alloc.state})`);
    const more = judged.length > shown.length ? ` and ${judged.length - shown.length} more` : '';
    return `deployment ${id} ${ended}; still judging ${plural(judged.length, 'allocation')}: ${shown.join(', ')}${more}`;
  }

  /** The deployment's allocations Warden judged unhealthy, by verdict time (then ID: the same order however they came). */
  private unhealthy(): UnhealthyAllocation[] {
    const id = this.deployment?.ID;
    return [...this.verdicts]
      .flatMap(([allocId, v]) =>
        v.deploymentId === id && 'healthy' in v.outcome && !v.outcome.healthy
          ? [{ allocId, name: v.name, at: v.outcome.at, reasons: v.outcome.reasons, ...('basis' in v.outcome ? { basis: v.outcome.basis } : {}) }]
          : [],
      )
      .sort((a, b) => a.at - b.at || a.allocId.localeCompare(b.allocId));
  }
}
