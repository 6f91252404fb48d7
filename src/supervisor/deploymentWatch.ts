import type { EvaluationOutcome } from '../../machines/evaluationOutcome.js';
import type { HealthOutcome } from '../../machines/allocationHealthTypes.js';
import type { Clock, TimerHandle } from '../clock/index.js';
import { durationMs, parseNomadTime } from '../health/nomadTime.js';
import type { Deployment, DeploymentState, ReschedulePolicy } from '../nomad/types.js';

/**
 * Judges one job version's deployment as Nomad's deployment watcher would
 * (nomad/deploymentwatcher/deployment_watcher.go), but from Warden's own allocation verdicts: Nomad's
 * health flags and counters are never read as verdicts.
 *
 * - Success: every task group has as many healthy allocations as it wants (max of DesiredTotal and
 *   DesiredCanaries, replacements of unhealthy ones included) and, with canaries, is promoted.
 * - Awaiting promotion: every group is done or has all its canaries healthy and waits for a manual
 *   promotion (no auto_promote): resolves `ok: true, awaitingPromotion: true` rather than waiting.
 * - Failure: an unhealthy allocation of a group whose progress_deadline is 0 ("Failed due to
 *   unhealthy allocations"), or one its reschedule policy cannot replace; the progress deadline
 *   passing without the healthy allocations Nomad requires ("Failed due to progress deadline"); a
 *   placement failure; Nomad ending the deployment failed or cancelled. With `failFast`, the first
 *   unhealthy allocation.
 *
 * The progress deadline (a group's RequireProgressBy) is Nomad's own where it moves for reasons
 * other than health (first placement, promotion, resume), and healthy verdict time +
 * ProgressDeadline where Nomad would move it for a healthy allocation. It runs on the injected clock.
 */

export interface UnhealthyAllocation {
  allocId: string;
  /** "<job>.<group>[<index>]" when known. */
  name: string | undefined;
  at: number;
  /** Per task, why it kept the allocation from being healthy. */
  reasons: Readonly<Record<string, string>>;
}

/**
 * What ended a failed deployment: `progress-deadline` and `unhealthy-allocations` are Nomad's two
 * rules ("Failed due to progress deadline" / "... unhealthy allocations"), `reschedule-exhausted`
 * the second case of the latter (an unhealthy allocation no reschedule can replace); `fail-fast` the option;
 * `placement` an evaluation that could not place the group; `nomad` Nomad ending the deployment
 * first; `nothing-to-judge` a job version without a deployment Warden can judge.
 */
export type DeploymentFailureRule =
  | 'progress-deadline'
  | 'unhealthy-allocations'
  | 'reschedule-exhausted'
  | 'fail-fast'
  | 'placement'
  | 'nomad'
  | 'nothing-to-judge';

export type DeploymentResult =
  | {
      ok: true;
      jobId: string;
      version: number;
      deploymentId: string;
      healthy: string[];
      /** Set when every canary is healthy and the deployment waits for a manual promotion. */
      awaitingPromotion?: true;
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
    };

export interface DeploymentWatchOptions {
  /** Times the progress deadline; without it the deadline is not timed. */
  clock?: Clock;
  /** Fail at the first unhealthy allocation instead of waiting for the progress deadline. */
  failFast?: boolean;
  /** Called with a result reached on the clock (the progress deadline), not in answer to an update. */
  onSettled?: (result: DeploymentResult) => void;
  /** The job version's reschedule policy by group; a group without one is taken as able to reschedule. */
  reschedulePolicies?: Readonly<Record<string, ReschedulePolicy | null | undefined>>;
}

interface Verdict {
  deploymentId: string;
  group: string | undefined;
  at: number;
}

type GroupProgress = 'done' | 'awaitingPromotion' | 'progressing';

const ENDED_BADLY = new Set(['failed', 'cancelled']);

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

function awaitsCanaries(state: DeploymentState): boolean {
  return state.DesiredCanaries > 0 && !state.Promoted;
}

export class DeploymentWatch {
  private deployment: Deployment | undefined;
  private readonly healthy = new Map<string, Verdict>();
  private readonly unhealthy = new Map<string, UnhealthyAllocation & Verdict>();
  /** Per group, Nomad's RequireProgressBy (ms) as last moved for a reason other than health. */
  private readonly nomadProgressBy = new Map<string, number>();
  private deadline: { at: number; timer: TimerHandle } | undefined;
  private result: DeploymentResult | undefined;

  constructor(
    readonly jobId: string,
    readonly namespace: string,
    readonly version: number,
    private readonly options: DeploymentWatchOptions = {},
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
    const previous = this.deployment?.ID === deployment.ID ? this.deployment : undefined;
    if (previous && deployment.ModifyIndex < previous.ModifyIndex) return this.result;
    if (!previous) this.nomadProgressBy.clear();
    this.followProgressDeadlines(deployment, previous);
    this.deployment = deployment;
    if (ENDED_BADLY.has(deployment.Status)) {
      return this.fail('nomad', `Deployment ${deployment.Status}: ${deployment.StatusDescription}`);
    }
    return this.judge();
  }

  /**
   * An allocation verdict of the job; `deploymentId` says which deployment placed the allocation.
   * Verdicts that arrive before their deployment is known are kept for when it is.
   */
  onVerdict(allocId: string, deploymentId: string | undefined, name: string | undefined, outcome: HealthOutcome): DeploymentResult | undefined {
    if (this.result || !deploymentId || 'stopped' in outcome) return this.result;
    const verdict = { deploymentId, group: this.groupOf(name), at: outcome.at };
    if (outcome.healthy) this.healthy.set(allocId, verdict);
    else this.unhealthy.set(allocId, { allocId, name, reasons: outcome.reasons, ...verdict });
    return this.judge();
  }

  /** A terminal evaluation of the job: placement failures within the deployment fail it. */
  onEvaluation(outcome: EvaluationOutcome, deploymentId: string | undefined): DeploymentResult | undefined {
    if (this.result || outcome.ok || outcome.failures.length === 0 || !deploymentId || deploymentId !== this.deployment?.ID) {
      return this.result;
    }
    const groups = outcome.failures.map((failure) => `"${failure.group}"`).join(', ');
    return this.fail('placement', `could not place task group${outcome.failures.length === 1 ? '' : 's'} ${groups}`, outcome);
  }

  /** Stops the deadline timer (the waiter is gone). */
  close(): void {
    if (this.deadline) this.options.clock?.clearTimeout(this.deadline.timer);
    this.deadline = undefined;
  }

  /**
   * Nomad moves RequireProgressBy at the first placement, a promotion or a resume, and for each
   * healthy allocation; the last is Nomad's health, so a move that comes with a change of
   * HealthyAllocs is left to Warden's own healthy verdicts.
   */
  private followProgressDeadlines(deployment: Deployment, previous: Deployment | undefined): void {
    for (const [group, state] of Object.entries(deployment.TaskGroups ?? {})) {
      const before = previous?.TaskGroups?.[group];
      if (before && (before.RequireProgressBy === state.RequireProgressBy || before.HealthyAllocs !== state.HealthyAllocs)) continue;
      const parsed = parseNomadTime(state.RequireProgressBy);
      if (parsed.ok && parsed.ms !== null) this.nomadProgressBy.set(group, parsed.ms);
    }
  }

  /** "<job>.<group>[<index>]" → group. */
  private groupOf(name: string | undefined): string | undefined {
    const prefix = `${this.jobId}.`;
    const bracket = name?.lastIndexOf('[') ?? -1;
    return name?.startsWith(prefix) && bracket > prefix.length ? name.slice(prefix.length, bracket) : undefined;
  }

  /** Verdicts of this deployment's allocations in `group` (every group when the name said none). */
  private inGroup<V extends Verdict>(verdicts: Iterable<V>, deploymentId: string, group: string): V[] {
    const single = Object.keys(this.deployment?.TaskGroups ?? {}).length === 1;
    return [...verdicts].filter((v) => v.deploymentId === deploymentId && (v.group === group || (v.group === undefined && single)));
  }

  private healthyCount(deploymentId: string, group: string): number {
    return this.inGroup(this.healthy.values(), deploymentId, group).length;
  }

  private progress(deploymentId: string, group: string, state: DeploymentState): GroupProgress {
    const healthy = this.healthyCount(deploymentId, group);
    if (awaitsCanaries(state)) return healthy >= state.DesiredCanaries && !state.AutoPromote ? 'awaitingPromotion' : 'progressing';
    return healthy >= Math.max(state.DesiredTotal, state.DesiredCanaries) ? 'done' : 'progressing';
  }

  /** When the group must next show progress: Nomad's deadline, pushed on by Warden's healthy verdicts. */
  private requireProgressBy(deploymentId: string, group: string, state: DeploymentState): number | undefined {
    const window = durationMs(state.ProgressDeadline);
    const nomad = this.nomadProgressBy.get(group);
    if (!window || nomad === undefined) return undefined;
    const lastHealthy = Math.max(...this.inGroup(this.healthy.values(), deploymentId, group).map((v) => v.at));
    return Math.max(nomad, lastHealthy + window);
  }

  /**
   * Nomad's Allocation.RescheduleEligible, counting the reschedules behind an allocation as the
   * unhealthy allocations of its slot (its name) earlier within the policy's interval.
   */
  private rescheduleEligible(alloc: UnhealthyAllocation & Verdict, unhealthy: readonly (UnhealthyAllocation & Verdict)[]): boolean {
    const group = alloc.group ?? Object.keys(this.deployment?.TaskGroups ?? {})[0];
    const policy = group === undefined ? undefined : this.options.reschedulePolicies?.[group];
    if (!policy || policy.Unlimited) return true;
    const attempts = policy.Attempts ?? 0;
    const interval = durationMs(policy.Interval) ?? 0;
    const attempted = unhealthy.filter((other) => other.name === alloc.name && other.at < alloc.at && other.at > alloc.at - interval).length;
    return attempted < attempts;
  }

  private unhealthyOf(deploymentId: string): (UnhealthyAllocation & Verdict)[] {
    return [...this.unhealthy.values()].filter((alloc) => alloc.deploymentId === deploymentId);
  }

  private judge(): DeploymentResult | undefined {
    const deployment = this.deployment;
    if (!deployment) return undefined;
    const groups = Object.entries(deployment.TaskGroups ?? {});
    const unhealthy = this.unhealthyOf(deployment.ID);
    if (unhealthy.length > 0 && this.options.failFast) return this.fail('fail-fast', plural(unhealthy.length, 'allocation') + ' unhealthy');
    // An unreadable progress_deadline is not taken for 0: the deadline then goes untimed rather than failing at once.
    const strict = groups.filter(([group, state]) => durationMs(state.ProgressDeadline) === 0 && this.inGroup(unhealthy, deployment.ID, group).length > 0);
    if (strict.length > 0) return this.fail('unhealthy-allocations', plural(unhealthy.length, 'allocation') + ' unhealthy');
    const stuck = unhealthy.filter((alloc) => !this.rescheduleEligible(alloc, unhealthy));
    if (stuck.length > 0) {
      const names = stuck.map((alloc) => alloc.name ?? alloc.allocId).join(', ');
      return this.fail('reschedule-exhausted', `${plural(unhealthy.length, 'allocation')} unhealthy; Failed due to unhealthy allocations: no reschedule attempt left for ${names}`);
    }
    if (groups.length === 0) return undefined;
    const progress = groups.map(([group, state]) => this.progress(deployment.ID, group, state));
    if (progress.every((p) => p !== 'progressing')) {
      this.close();
      const healthy = [...this.healthy].filter(([, v]) => v.deploymentId === deployment.ID).map(([allocId]) => allocId);
      const awaiting = progress.includes('awaitingPromotion') ? { awaitingPromotion: true as const } : {};
      this.result = { ok: true, jobId: this.jobId, version: this.version, deploymentId: deployment.ID, healthy, ...awaiting };
      return this.result;
    }
    this.armDeadline(deployment, groups, progress);
    return undefined;
  }

  /** Nomad's deadline timer: the earliest RequireProgressBy of the groups not done. */
  private armDeadline(deployment: Deployment, groups: [string, DeploymentState][], progress: GroupProgress[]): void {
    const clock = this.options.clock;
    if (!clock) return;
    const cutoffs = groups.flatMap(([group, state], i) => (progress[i] === 'done' ? [] : (this.requireProgressBy(deployment.ID, group, state) ?? [])));
    const at = cutoffs.length === 0 ? undefined : Math.min(...cutoffs);
    if (at === this.deadline?.at) return;
    this.close();
    if (at === undefined) return;
    this.deadline = { at, timer: clock.setTimeout(() => this.onDeadline(at), Math.max(0, at - clock.now())) };
  }

  /** Nomad's shouldFail at the deadline: a group short of healthy allocations (canaries before promotion). */
  private onDeadline(at: number): void {
    this.deadline = undefined;
    const deployment = this.deployment;
    if (this.result || !deployment || deployment.Status === 'paused') return;
    const short = Object.entries(deployment.TaskGroups ?? {}).flatMap(([group, state]) => {
      const wanted = awaitsCanaries(state) ? state.DesiredCanaries : state.DesiredTotal;
      const healthy = this.healthyCount(deployment.ID, group);
      return healthy < wanted ? [`group "${group}" had ${healthy} of ${plural(wanted, 'allocation')} healthy`] : [];
    });
    if (short.length === 0) return;
    const unhealthy = this.unhealthyOf(deployment.ID).length;
    const headline = unhealthy > 0 ? `${plural(unhealthy, 'allocation')} unhealthy` : 'no progress';
    const result = this.fail('progress-deadline', `${headline}; Failed due to progress deadline: ${short.join(', ')} by ${new Date(at).toISOString()}`);
    this.options.onSettled?.(result);
  }

  private fail(rule: DeploymentFailureRule, reason: string, evaluation?: EvaluationOutcome): DeploymentResult {
    this.close();
    const nomadRule = rule === 'progress-deadline' || rule === 'unhealthy-allocations';
    const autoRevert = nomadRule && Object.values(this.deployment?.TaskGroups ?? {}).some((state) => state.AutoRevert);
    this.result = {
      ok: false,
      jobId: this.jobId,
      version: this.version,
      deploymentId: this.deployment?.ID,
      reason: autoRevert ? `${reason} (auto_revert: Nomad rolls back to the latest stable version)` : reason,
      rule,
      unhealthy: this.unhealthyOf(this.deployment?.ID ?? '').map(({ deploymentId: _d, group: _g, ...alloc }) => alloc),
      ...(evaluation ? { evaluation } : {}),
    };
    return this.result;
  }
}
