/**
 * FakeNomad acting as a cluster (opt-in: `FakeNomad.start({ acting: true })`): what Nomad's
 * scheduler and a client node do by themselves, on the clock, built on ClusterState's scripting
 * methods. It follows the cluster's own event batches, as Nomad's workers follow the eval broker:
 * - a pending evaluation is scheduled after `scheduleDelayMs`: missing allocations placed, extra
 *   ones stopped (highest index first), allocations of an older job version updated in place or
 *   replaced as Nomad 1.1.2 decides (updates.ts), or the placement fails when a failure is injected;
 * - a placed allocation is received after `receiveDelayMs` (Received, Task Setup, its task
 *   directories made under `allocRoot`), and its tasks start `startDelayMs` later (Started), or fail
 *   when an allocation failure is injected (Terminated, Not Restarting: failed);
 * - an allocation told to stop is killed after `stopDelayMs` (Killing, Terminated, Killed: complete);
 * - `lose(allocId)` plays a node going down: the allocation is lost and a replacement placed;
 * - the allocations and evaluations of a purged job are garbage-collected `gcAfterMs` after they end;
 * - dynamic ports get host ports (20000 up, on 127.0.0.1) in AllocatedResources.Shared.Ports.
 * Scripting the cluster by hand still works beside it; without `acting`, nothing happens by itself.
 */
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Clock } from '../../clock/index.js';
import type { Allocation, Evaluation } from '../../nomad/types.js';
import type { ClusterState } from './clusterState.js';
import type { EventBatch, EventBroker } from './eventBroker.js';
import type { JsonObject } from './jobSpec.js';
import { tasksUpdated } from './updates.js';

export interface ActingClusterOptions {
  /** A pending evaluation is processed this long after it appears (default 50 ms). */
  scheduleDelayMs?: number;
  /** A placed allocation is received by the client this long after (default 100 ms). */
  receiveDelayMs?: number;
  /** Its tasks start this long after it was received (default 400 ms). */
  startDelayMs?: number;
  /** An allocation told to stop is killed this long after (default 100 ms). */
  stopDelayMs?: number;
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

export interface AllocationFailure extends FailureMatch {
  /** The failing task's exit code (default 1). */
  exitCode?: number;
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

/** The index in an allocation's name, `web.app[3]` → 3. */
function nameIndex(name: string | undefined): number {
  return Number(/\[(\d+)\]$/.exec(name ?? '')?.[1] ?? 0);
}

export class ActingCluster {
  private readonly timers = new Set<unknown>();
  /** Evaluations, allocations and purged jobs with work scheduled, so each is scheduled once. */
  private readonly scheduled = new Set<string>();
  private readonly placementFailures: Armed<PlacementFailure>[] = [];
  private readonly allocationFailures: Armed<AllocationFailure>[] = [];
  private readonly unlisten: () => void;
  private nextPort = 20_000;
  private readonly delays: Required<Omit<ActingClusterOptions, 'allocRoot'>>;

  constructor(
    private readonly cluster: ClusterState,
    broker: EventBroker,
    private readonly clock: Clock,
    private readonly options: ActingClusterOptions = {},
  ) {
    this.delays = {
      scheduleDelayMs: options.scheduleDelayMs ?? 50,
      receiveDelayMs: options.receiveDelayMs ?? 100,
      startDelayMs: options.startDelayMs ?? 400,
      stopDelayMs: options.stopDelayMs ?? 100,
      gcAfterMs: options.gcAfterMs ?? 60_000,
    };
    this.unlisten = broker.listen((batch) => this.follow(batch));
  }

  /** The next placement(s) of matching jobs find no room: FailedTGAllocs and a blocked evaluation. */
  failPlacements(plan: PlacementFailure = {}): void {
    this.placementFailures.push({ plan, left: plan.times ?? 1 });
  }

  /** The next matching allocation(s) fail as their task starts. */
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
    this.cluster.batch(() => {
      this.cluster.patchAllocation(allocId, { ClientStatus: 'lost', ClientDescription: '', DesiredStatus: 'stop', DesiredDescription: 'alloc is lost since its node is down' }, 'PlanResult');
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
    this.after(`restart:${allocId}:${task}`, delayMs, () => {
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
    this.scheduled.clear();
  }

  private after(key: string, delayMs: number, work: () => void): void {
    if (this.scheduled.has(key)) return;
    this.scheduled.add(key);
    const timer = this.clock.setTimeout(() => {
      this.timers.delete(timer);
      this.scheduled.delete(key);
      work();
    }, delayMs);
    this.timers.add(timer);
  }

  private follow(batch: EventBatch): void {
    for (const event of batch.Events) {
      if (event.Topic === 'Evaluation') this.onEvaluation(event.Payload.Evaluation as Evaluation);
      else if (event.Topic === 'Allocation') this.onAllocation(event.Payload.Allocation as Allocation);
    }
  }

  private onEvaluation(evaluation: Evaluation): void {
    const namespace = evaluation.Namespace ?? 'default';
    const jobId = evaluation.JobID ?? '';
    if (evaluation.Status === 'pending') {
      this.after(`eval:${evaluation.ID}`, this.delays.scheduleDelayMs, () => this.evaluate(evaluation.ID));
    } else if (evaluation.TriggeredBy === 'job-deregister' && this.cluster.job(jobId, { namespace }) === undefined) {
      this.collectLater(namespace, jobId);
    }
  }

  private onAllocation(alloc: Allocation): void {
    const stopping = alloc.DesiredStatus === 'stop' || alloc.DesiredStatus === 'evict';
    if (!stopping && alloc.ClientStatus === 'pending' && alloc.TaskStates == null) {
      this.after(`receive:${alloc.ID}`, this.delays.receiveDelayMs, () => this.receive(alloc.ID));
    } else if (stopping && !isClientTerminal(alloc.ClientStatus)) {
      this.after(`kill:${alloc.ID}`, this.delays.stopDelayMs, () => this.kill(alloc.ID));
    }
  }

  /** The scheduler's pass over every group of the evaluation's job. */
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
    let planned = false;
    for (const group of job.TaskGroups as JsonObject[]) planned = this.scheduleGroup(job, group, evalId, namespace) || planned;
    if (!planned) this.cluster.updateEvaluation(evalId, { Status: 'complete', QueuedAllocations: {} });
  }

  /** Returns whether a plan was applied (which completes the evaluation). */
  private scheduleGroup(job: JsonObject, group: JsonObject, evalId: string, namespace: string): boolean {
    const jobId = String(job.ID);
    const name = String(group.Name);
    const live = this.cluster
      .listAllocations({ namespace, jobId })
      .filter((a) => a.TaskGroup === name && a.DesiredStatus === 'run' && !isClientTerminal(String(a.ClientStatus)));
    const stale = live.filter((a) => a.JobVersion !== job.Version);
    const replaced = stale.filter((a) => {
      const from = this.cluster.allocation(String(a.ID))?.Job as JsonObject | undefined;
      return from === undefined || tasksUpdated(from, job, name);
    });
    const kept = live.filter((a) => !replaced.includes(a)).sort((a, b) => nameIndex(String(a.Name)) - nameIndex(String(b.Name)));
    const wanted = Number(group.Count);
    const place = Math.max(0, wanted - kept.length);
    const stop = [...replaced, ...kept.slice(wanted)].map((a) => String(a.ID));
    let planned = false;
    if (replaced.length === 0 && stale.length > 0) {
      this.cluster.updateInPlace(jobId, { namespace, group: name, evalId });
      planned = true;
    }
    if (place === 0 && stop.length === 0) return planned;
    const failure = place > 0 ? take(this.placementFailures, jobId) : undefined;
    if (failure !== undefined) {
      this.cluster.failPlacement(jobId, { namespace, group: name, evalId, ...(failure.dimension === undefined ? {} : { dimension: failure.dimension }) });
    } else {
      this.cluster.batch(() => {
        const placed = this.cluster.placeAllocations(jobId, { namespace, group: name, evalId, count: place, stop });
        for (const alloc of placed) this.assignPorts(alloc.ID, group);
      });
    }
    return true;
  }

  /** The scheduler picks host ports for the group's dynamic ports (from 20000 up on the fake's one node, IP 127.0.0.1). */
  private assignPorts(allocId: string, group: JsonObject): void {
    const networks = (group.Networks as JsonObject[] | null) ?? [];
    const ports = networks.flatMap((network) =>
      [...((network.ReservedPorts as JsonObject[] | null) ?? []), ...((network.DynamicPorts as JsonObject[] | null) ?? [])].map((port) => ({
        Label: port.Label, Value: Number(port.Value ?? 0) || this.nextPort++, To: Number(port.To ?? 0), HostIP: '127.0.0.1',
      })),
    );
    if (ports.length === 0) return;
    const resources = this.cluster.allocation(allocId)?.AllocatedResources as JsonObject | undefined;
    const shared = { ...(resources?.Shared as JsonObject | undefined), Ports: ports };
    this.cluster.patchAllocation(allocId, { AllocatedResources: { ...resources, Shared: shared } }, 'PlanResult');
  }

  private receive(allocId: string): void {
    const alloc = this.cluster.allocation(allocId);
    if (alloc === undefined || alloc.DesiredStatus !== 'run' || alloc.ClientStatus !== 'pending') return;
    const tasks = (alloc.Job?.TaskGroups ?? []).find((group) => group.Name === alloc.TaskGroup)?.Tasks ?? [];
    if (this.options.allocRoot !== undefined) {
      // Task Setup: "Building Task Directory". Modes as Nomad's allocdir gives them: the allocation's
      // own directory 0755, the shared alloc/ and each task's directories 0777, so a task's
      // unprivileged user (an execution's setuser) can enter and write them.
      const allocDir = join(this.options.allocRoot, allocId);
      mkdirSync(allocDir, { recursive: true });
      chmodSync(allocDir, 0o755);
      const writable = [join(allocDir, 'alloc'), ...tasks.flatMap((task) => [join(allocDir, task.Name), join(allocDir, task.Name, 'local')])];
      for (const dir of writable) {
        mkdirSync(dir, { recursive: true });
        chmodSync(dir, 0o777);
      }
    }
    this.cluster.receiveAllocation(allocId);
    this.after(`start:${allocId}`, this.delays.startDelayMs, () => this.start(allocId, tasks[0]?.Name));
  }

  private start(allocId: string, firstTask: string | undefined): void {
    const alloc = this.cluster.allocation(allocId);
    if (alloc === undefined || alloc.DesiredStatus !== 'run' || isClientTerminal(alloc.ClientStatus)) return;
    const failure = firstTask === undefined ? undefined : take(this.allocationFailures, alloc.JobID);
    if (failure !== undefined && firstTask !== undefined) this.cluster.failTask(allocId, firstTask, { exitCode: failure.exitCode ?? 1 });
    else this.cluster.startTask(allocId);
  }

  private kill(allocId: string): void {
    const alloc = this.cluster.allocation(allocId);
    if (alloc === undefined || isClientTerminal(alloc.ClientStatus)) return;
    this.cluster.killTasks(allocId);
  }

  private collectLater(namespace: string, jobId: string): void {
    if (!Number.isFinite(this.delays.gcAfterMs)) return;
    this.after(`gc:${namespace}\u0000${jobId}`, this.delays.gcAfterMs, () => {
      if (this.cluster.job(jobId, { namespace }) !== undefined) return;
      const allocs = this.cluster.listAllocations({ namespace, jobId });
      // Not until every allocation has ended: look again later.
      if (allocs.some((a) => !isClientTerminal(String(a.ClientStatus)))) return this.collectLater(namespace, jobId);
      this.cluster.garbageCollect({
        allocIds: allocs.map((a) => String(a.ID)),
        evalIds: this.cluster.listEvaluations({ namespace, jobId }).map((e) => e.ID),
      });
    });
  }
}
