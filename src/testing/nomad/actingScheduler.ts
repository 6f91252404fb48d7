/**
 * The fake's scheduler, acting by itself (FakeNomad `acting`): a pending evaluation is processed
 * `scheduleDelayMs` after it appears (6 ms: Nomad's worker takes it from the broker at once), or at
 * its WaitUntil, and its job reconciled group by group as Nomad 1.1.2's generic scheduler does
 * (scheduler/reconcile.go), in one plan:
 * - missing allocations placed, extra ones stopped (highest index first);
 * - allocations of an older job version updated in place, or replaced (updates.ts tasksUpdated), a
 *   service job's at most max_parallel at a time while the new ones are not healthy yet;
 * - a failed allocation rescheduled by its group's reschedule policy: at once when due, else a
 *   follow-up evaluation waiting until it is (WaitUntil), named by the allocation's FollowupEvalID;
 *   one in an active deployment only once the deployment watcher marked it for rescheduling;
 * - or, with an injected placement failure, FailedTGAllocs and a blocked evaluation.
 */
import type { Clock } from '../../clock/index.js';
import type { Allocation, Evaluation } from '../../nomad/types.js';
import type { ClusterState } from './clusterState.js';
import { nanosFromMillis, rfc3339Nano } from './goText.js';
import type { JsonObject } from './jobSpec.js';
import { freeNames, nameIndex, STOP_REASONS, type PlanPlacement, type PlanStop } from './plan.js';
import { nextDelay, nextRescheduleTime, nextTracker } from './reschedule.js';
import { tasksUpdated } from './updates.js';
import type { Schedule } from './actingClient.js';

/** reconcile.go rescheduleWindowSize: failed allocations due within this long are rescheduled now. */
const RESCHEDULE_WINDOW_MS = 1_000;

/** A plan as the reconciler builds it up, group by group. */
interface WorkingPlan {
  evalId: string;
  place: PlanPlacement[];
  stop: PlanStop[];
  inPlace: string[];
  followups: Record<string, string>;
}

const isClientTerminal = (status: string | undefined): boolean => status === 'complete' || status === 'failed' || status === 'lost';

export interface SchedulerHooks {
  /** The placement failure injected for this job, if one is armed (used up by the call). */
  placementFailure(jobId: string): { dimension?: string } | undefined;
}

export class ActingScheduler {
  /** Evaluations with a pass scheduled, so each is processed once. */
  private readonly scheduled = new Set<string>();

  constructor(
    private readonly cluster: ClusterState,
    private readonly clock: Clock,
    private readonly delayMs: number,
    private readonly schedule: Schedule,
    private readonly hooks: SchedulerHooks,
  ) {}

  onEvaluation(evaluation: Evaluation): void {
    if (evaluation.Status !== 'pending' || this.scheduled.has(evaluation.ID)) return;
    this.scheduled.add(evaluation.ID);
    const waitUntil = evaluation.WaitUntil ? Date.parse(String(evaluation.WaitUntil)) : 0;
    const delay = Math.max(this.delayMs, waitUntil - this.clock.now());
    this.schedule(delay, () => {
      this.scheduled.delete(evaluation.ID);
      this.evaluate(evaluation.ID);
    });
  }

  clear(): void {
    this.scheduled.clear();
  }

  private evaluate(evalId: string): void {
    const evaluation = this.cluster.evaluation(evalId);
    if (evaluation?.Status !== 'pending') return;
    const namespace = evaluation.Namespace ?? 'default';
    const jobId = evaluation.JobID ?? '';
    const job = this.cluster.job(jobId, { namespace }) as JsonObject | undefined;
    if (job === undefined || job.Stop === true) {
      this.cluster.updateEvaluation(evalId, { Status: 'complete' });
      return;
    }
    const plan: WorkingPlan = { evalId, place: [], stop: [], inPlace: [], followups: {} };
    for (const group of job.TaskGroups as JsonObject[]) {
      const failure = this.reconcile(job, group, evaluation, plan);
      if (failure !== undefined) {
        this.cluster.failPlacement(jobId, { namespace, group: String(group.Name), evalId, ...(failure.dimension === undefined ? {} : { dimension: failure.dimension }) });
        return;
      }
    }
    const empty = plan.place.length + plan.stop.length + plan.inPlace.length + Object.keys(plan.followups).length === 0;
    if (empty) this.cluster.finishEvaluation(evalId, job);
    else this.cluster.applyPlan(jobId, plan, { namespace });
  }

  /** One group's share of the plan; a placement failure to inject instead, if one is armed. */
  private reconcile(job: JsonObject, group: JsonObject, evaluation: Evaluation, plan: WorkingPlan): { dimension?: string } | undefined {
    const namespace = String(job.Namespace);
    const jobId = String(job.ID);
    const name = String(group.Name);
    const allocs = this.cluster.listAllocations({ namespace, jobId }).filter((a) => a.TaskGroup === name).map((a) => this.cluster.allocation(String(a.ID))!);
    const live = allocs.filter((a) => a.DesiredStatus === 'run' && !isClientTerminal(a.ClientStatus));
    const failed = allocs.filter((a) => a.DesiredStatus === 'run' && a.ClientStatus === 'failed' && !a.NextAllocation);
    const holding = this.reschedule(job, group, failed, evaluation, plan);

    const stale = live.filter((a) => a.Job?.Version !== job.Version);
    const destructive = stale.filter((a) => a.Job === undefined || tasksUpdated(a.Job as unknown as JsonObject, job, name)).sort(byName);
    for (const alloc of stale) if (!destructive.includes(alloc)) plan.inPlace.push(alloc.ID);
    const replacing = destructive.slice(0, this.updateRoom(job, group, live));
    for (const alloc of replacing) {
      plan.place.push({ group: name, name: String(alloc.Name), previousAllocation: alloc.ID });
      plan.stop.push({ allocId: alloc.ID, description: STOP_REASONS.updated });
    }
    const kept = live.filter((a) => !replacing.includes(a)).sort(byName);
    const occupied = kept.length + holding + replacing.length;
    const wanted = Number(group.Count);
    if (occupied < wanted) {
      const failure = this.hooks.placementFailure(jobId);
      if (failure !== undefined) return failure;
      const taken = plan.place.filter((p) => p.group === name).map((p) => p.name);
      const names = freeNames(jobId, name, [...allocs, ...taken.map((n) => ({ Name: n, DesiredStatus: 'run' }))] as unknown as JsonObject[], wanted - occupied);
      for (const placement of names) plan.place.push({ group: name, name: placement });
    }
    for (const extra of kept.slice(Math.max(0, wanted - holding - replacing.length))) plan.stop.push({ allocId: extra.ID, description: STOP_REASONS.notNeeded });
    return undefined;
  }

  /**
   * Failed allocations: rescheduled now when due, given a follow-up evaluation when due later;
   * returns how many keep their slot (waiting, or not to be rescheduled at all).
   */
  private reschedule(job: JsonObject, group: JsonObject, failed: readonly Allocation[], evaluation: Evaluation, plan: WorkingPlan): number {
    const policy = group.ReschedulePolicy as JsonObject | null;
    const now = this.clock.now();
    const later = new Map<number, string[]>();
    let holding = 0;
    for (const alloc of failed) {
      const record = alloc as unknown as JsonObject;
      const { at, eligible } = nextRescheduleTime(record, policy);
      const deployment = alloc.DeploymentID ? this.cluster.deployment(alloc.DeploymentID) : undefined;
      const waitsForWatcher = deployment?.Status === 'running' && alloc.DesiredTransition?.Reschedule !== true;
      const followed = alloc.FollowupEvalID !== undefined && alloc.FollowupEvalID !== '' && alloc.FollowupEvalID !== evaluation.ID;
      if (!eligible || waitsForWatcher || followed) {
        holding += 1;
      } else if (at / 1e6 <= now + RESCHEDULE_WINDOW_MS) {
        const delay = nextDelay(record, policy);
        const placement: PlanPlacement = { group: String(group.Name), name: String(alloc.Name), previousAllocation: alloc.ID, rescheduleTracker: nextTracker(record, nanosFromMillis(now), delay) };
        plan.place.push(placement);
        plan.stop.push({ allocId: alloc.ID, description: STOP_REASONS.rescheduled });
      } else {
        holding += 1;
        const due = Math.round(at / 1e6);
        later.set(due, [...(later.get(due) ?? []), alloc.ID]);
      }
    }
    for (const [due, allocIds] of later) {
      const followup = this.cluster.createEvaluation(String(job.ID), {
        TriggeredBy: 'alloc-failure', Status: 'pending', StatusDescription: 'created for delayed rescheduling',
        WaitUntil: rfc3339Nano(due), PreviousEval: evaluation.ID, JobModifyIndex: this.cluster.index,
      }, { namespace: String(job.Namespace) });
      for (const id of allocIds) plan.followups[id] = followup.ID;
    }
    return holding;
  }

  /** How many destructive updates may start now: a service job's max_parallel, less the new allocations not healthy yet. */
  private updateRoom(job: JsonObject, group: JsonObject, live: readonly Allocation[]): number {
    const update = group.Update as JsonObject | null;
    if (job.Type !== 'service' || !update || Number(update.MaxParallel) <= 0) return Infinity;
    const unhealthyNew = live.filter((a) => a.Job?.Version === job.Version && a.DeploymentStatus?.Healthy !== true).length;
    return Math.max(0, Number(update.MaxParallel) - unhealthyNew);
  }
}

function byName(a: Allocation, b: Allocation): number {
  return nameIndex(a.Name) - nameIndex(b.Name);
}
