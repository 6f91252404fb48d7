/**
 * FakeNomad acting as a cluster (opt-in: `FakeNomad.start({ acting: true })`): what Nomad's
 * servers and one client node do by themselves, on the clock, with Nomad 1.1.2's timing and
 * batching (measured on a real agent, held to it by test/conformance):
 * - the scheduler (actingScheduler.ts) plans a pending evaluation 6 ms after it appears, or at its
 *   WaitUntil: placements, stops, in-place updates and replacements, reschedules of failed
 *   allocations, injected placement failures;
 * - the client (actingClient.ts) receives a placed allocation 5 ms later, starts it 250 ms after
 *   that, stops it (Killing, then Terminated and Killed), restarts or fails it as the restart policy
 *   says when a failure is injected, tracks its deployment health from its tasks, and reports in
 *   Nomad's batches: every 200 ms, applied 50 ms later as one raft write, a failed allocation's
 *   reschedule evaluation beside it;
 * - the deployment watcher (deploymentWatcher.ts) marks a deployment successful once its
 *   allocations are healthy, and an unhealthy allocation for rescheduling;
 * - `lose(allocId)` plays a node going down: the allocation is lost and a replacement placed;
 * - the allocations and evaluations of a purged job are garbage-collected `gcAfterMs` after they end;
 * - dynamic ports get host ports (20000 up, on 127.0.0.1) in AllocatedResources.Shared.Ports.
 * Scripting the cluster by hand still works beside it; without `acting`, nothing happens by itself.
 */
import type { Clock } from '../../clock/index.js';
import type { Allocation, Evaluation } from '../../nomad/types.js';
import { ActingClient, type ClientFailure, type ClientTiming } from './actingClient.js';
import { ActingScheduler } from './actingScheduler.js';
import type { ClusterState } from './clusterState.js';
import { DeploymentWatcher } from './deploymentWatcher.js';
import type { EventBatch, EventBroker } from './eventBroker.js';
import type { SeededRandom } from './ids.js';
import { STOP_REASONS } from './plan.js';

export interface ActingClusterOptions {
  /** A pending evaluation is processed this long after it appears (default 6 ms). */
  scheduleDelayMs?: number;
  /** A placed allocation is received by the client this long after (default 5 ms). */
  receiveDelayMs?: number;
  /** Its tasks start this long after it was received (default 250 ms). */
  startDelayMs?: number;
  /** An allocation told to stop gets its Killing this long after (default 5 ms). */
  stopDelayMs?: number;
  /** Killing to the task's exit (default 250 ms). */
  killDurationMs?: number;
  /** The client's report batching period (default 200 ms, client.go allocSyncIntv). */
  syncIntervalMs?: number;
  /** The server's batching of client reports (default 50 ms, node_endpoint.go batchUpdateInterval). */
  serverBatchMs?: number;
  /** The deployment watcher acts this long after a health report (default 1,250 ms). */
  deploymentWatcherDelayMs?: number;
  /** What is left of a purged job is forgotten this long after its allocations ended (default 60 s; Infinity: never). */
  gcAfterMs?: number;
  /** Where allocation directories live (the exec root): `<root>/<alloc>/alloc` and `<root>/<alloc>/<task>/local`. */
  allocRoot?: string;
}

/** Which registrations or allocations an injected failure hits, and how many times. */
export interface FailureMatch {
  /** Jobs whose ID equals this, or matches this expression (default: any). */
  jobId?: string | RegExp;
  /** How many times (default 1; Infinity until cleared). */
  times?: number;
}

export interface PlacementFailure extends FailureMatch {
  /** The exhausted resource named by the placement metrics (default memory). */
  dimension?: string;
}

/**
 * Allocations whose first task exits every time it starts: restarted as the group's restart policy
 * allows, then failed (and rescheduled as its reschedule policy allows). `times` counts allocations.
 */
export interface AllocationFailure extends FailureMatch {
  /** The failing task's exit code (default 1). */
  exitCode?: number;
  /** How long it runs before it exits (default 0 ms). */
  runMs?: number;
}

interface Armed<T> {
  plan: T;
  left: number;
}

function matches(plan: FailureMatch, jobId: string): boolean {
  if (plan.jobId === undefined) return true;
  return typeof plan.jobId === 'string' ? plan.jobId === jobId : plan.jobId.test(jobId);
}

/** Takes one use of the first armed plan that matches `jobId`. */
function take<T extends FailureMatch>(armed: Armed<T>[], jobId: string): T | undefined {
  const found = armed.find((entry) => matches(entry.plan, jobId));
  if (found === undefined) return undefined;
  found.left -= 1;
  if (found.left <= 0) armed.splice(armed.indexOf(found), 1);
  return found.plan;
}

const isClientTerminal = (status: string | undefined): boolean => status === 'complete' || status === 'failed' || status === 'lost';

export class ActingCluster {
  private readonly timers = new Set<unknown>();
  /** Purged jobs with a collection scheduled. */
  private readonly collecting = new Set<string>();
  private readonly placementFailures: Armed<PlacementFailure>[] = [];
  private readonly allocationFailures: Armed<AllocationFailure>[] = [];
  private readonly unlisten: () => void;
  private readonly gcAfterMs: number;
  private readonly scheduler: ActingScheduler;
  private readonly client: ActingClient;
  private readonly watcher: DeploymentWatcher;

  constructor(
    private readonly cluster: ClusterState,
    broker: EventBroker,
    private readonly clock: Clock,
    random: SeededRandom,
    options: ActingClusterOptions = {},
  ) {
    this.gcAfterMs = options.gcAfterMs ?? 60_000;
    const schedule = (delayMs: number, work: () => void): void => this.after(delayMs, work);
    this.scheduler = new ActingScheduler(cluster, clock, options.scheduleDelayMs ?? 6, schedule, {
      placementFailure: (jobId) => take(this.placementFailures, jobId),
    });
    const timing: ClientTiming = {
      receiveDelayMs: options.receiveDelayMs ?? 5,
      startDelayMs: options.startDelayMs ?? 250,
      killDelayMs: options.stopDelayMs ?? 5,
      killDurationMs: options.killDurationMs ?? 250,
      syncIntervalMs: options.syncIntervalMs ?? 200,
      serverBatchMs: options.serverBatchMs ?? 50,
    };
    this.client = new ActingClient(cluster, clock, random, timing, schedule, {
      ...(options.allocRoot === undefined ? {} : { allocRoot: options.allocRoot }),
      failureFor: (alloc) => this.failureFor(alloc),
    });
    this.watcher = new DeploymentWatcher(cluster, options.deploymentWatcherDelayMs ?? 1_250, schedule);
    this.unlisten = broker.listen((batch) => this.follow(batch));
  }

  /** The next placement(s) of matching jobs find no room: FailedTGAllocs and a blocked evaluation. */
  failPlacements(plan: PlacementFailure = {}): void {
    this.placementFailures.push({ plan, left: plan.times ?? 1 });
  }

  /** The next matching allocation(s) fail: their first task exits each time it starts. */
  failAllocations(plan: AllocationFailure = {}): void {
    this.allocationFailures.push({ plan, left: plan.times ?? 1 });
  }

  clearFailures(): void {
    this.placementFailures.length = 0;
    this.allocationFailures.length = 0;
  }

  /** The allocation's node went down: it is lost, and (its job still wanting it) a replacement is placed. */
  lose(allocId: string): Allocation {
    const alloc = this.cluster.allocation(allocId);
    if (alloc === undefined) throw new Error(`no allocation ${allocId}`);
    const namespace = alloc.Namespace ?? 'default';
    this.client.forget(allocId);
    this.cluster.batch(() => {
      this.cluster.patchAllocation(allocId, { ClientStatus: 'lost', ClientDescription: '', DesiredStatus: 'stop', DesiredDescription: STOP_REASONS.lost }, 'PlanResult');
      const job = this.cluster.job(alloc.JobID, { namespace });
      if (job === undefined || job.Stop === true) return;
      const evaluation = this.cluster.createEvaluation(alloc.JobID, { TriggeredBy: 'node-update' }, { namespace });
      const [replacement] = this.cluster.placeAllocations(alloc.JobID, { namespace, group: alloc.TaskGroup, count: 1, evalId: evaluation.ID });
      if (replacement) this.cluster.patchAllocation(replacement.ID, { PreviousAllocation: allocId }, 'PlanResult');
    });
    return this.cluster.allocation(allocId)!;
  }

  /** A task that exited and restarts within its policy is started again `delayMs` later (unless its allocation is stopping by then). */
  restartTask(allocId: string, task: string, delayMs: number): void {
    this.after(delayMs, () => {
      const alloc = this.cluster.allocation(allocId);
      if (alloc?.DesiredStatus === 'run' && !isClientTerminal(alloc.ClientStatus)) this.cluster.startTask(allocId, task);
    });
  }

  /** Work scheduled and not done yet (timers on the clock). */
  get pending(): number {
    return this.timers.size;
  }

  stop(): void {
    this.unlisten();
    for (const timer of this.timers) this.clock.clearTimeout(timer);
    this.timers.clear();
    this.collecting.clear();
    this.scheduler.clear();
    this.watcher.clear();
  }

  private after(delayMs: number, work: () => void): void {
    const timer = this.clock.setTimeout(() => {
      this.timers.delete(timer);
      work();
    }, delayMs);
    this.timers.add(timer);
  }

  private failureFor(alloc: Allocation): ClientFailure | undefined {
    const plan = take(this.allocationFailures, alloc.JobID);
    return plan === undefined ? undefined : { exitCode: plan.exitCode ?? 1, runMs: plan.runMs ?? 0 };
  }

  private follow(batch: EventBatch): void {
    for (const event of batch.Events) {
      if (event.Topic === 'Evaluation') this.onEvaluation(event.Payload.Evaluation as Evaluation);
      else if (event.Topic === 'Allocation') {
        const alloc = event.Payload.Allocation as Allocation;
        this.client.onAllocation(alloc);
        this.watcher.onAllocation(alloc);
      }
    }
  }

  private onEvaluation(evaluation: Evaluation): void {
    const namespace = evaluation.Namespace ?? 'default';
    const jobId = evaluation.JobID ?? '';
    if (evaluation.Status === 'pending') this.scheduler.onEvaluation(evaluation);
    else if (evaluation.TriggeredBy === 'job-deregister' && this.cluster.job(jobId, { namespace }) === undefined) this.collectLater(namespace, jobId);
  }

  private collectLater(namespace: string, jobId: string): void {
    const key = `${namespace}\u0000${jobId}`;
    if (!Number.isFinite(this.gcAfterMs) || this.collecting.has(key)) return;
    this.collecting.add(key);
    this.after(this.gcAfterMs, () => {
      this.collecting.delete(key);
      if (this.cluster.job(jobId, { namespace }) !== undefined) return;
      const allocs = this.cluster.listAllocations({ namespace, jobId });
      // Not until every allocation has ended: look again later.
      if (allocs.some((a) => !isClientTerminal(String(a.ClientStatus)))) return this.collectLater(namespace, jobId);
      for (const alloc of allocs) this.client.forget(String(alloc.ID));
      this.cluster.garbageCollect({
        allocIds: allocs.map((a) => String(a.ID)),
        evalIds: this.cluster.listEvaluations({ namespace, jobId }).map((e) => e.ID),
      });
    });
  }
}
