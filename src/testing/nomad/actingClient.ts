/**
 * The fake's one client node, acting by itself (FakeNomad `acting`): an allocation runner for each
 * allocation placed on it, and Nomad 1.1.2's way of telling the servers (client/client.go
 * allocSync): changes collect for 200 ms, the latest state of each allocation goes in one
 * Node.UpdateAlloc, which the server applies 50 ms later as one raft write; the next batch waits
 * 200 ms after that. So the allocations of one placement are reported together, and a task that
 * started within the same period is reported running with no pending report before it.
 *
 * Each runner: received a few ms after placement (Received, Task Setup, its directories made),
 * started `startDelayMs` later (Started), or, with an injected failure, started and exited, then
 * restarted as the group's restart policy allows (Restarting, with Nomad's 25% jitter) or failed for
 * good (Not Restarting); told to stop, it reports Killing, then Terminated and Killed. For an
 * allocation in a deployment whose health Nomad tracks from task states (health_check task_states,
 * or checks with no service checks), it reports healthy once all tasks ran `min_healthy_time`, and
 * unhealthy (Alloc Unhealthy) when a task fails or the allocation is stopped before.
 */
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Clock } from '../../clock/index.js';
import type { Allocation } from '../../nomad/types.js';
import type { ClientReport, ClusterState } from './clusterState.js';
import { goDuration } from './goText.js';
import type { SeededRandom } from './ids.js';
import type { JsonObject } from './jobSpec.js';
import { allocUnhealthy, exited, killedAfterKilling, killing, notRestarting, received, restarting, started, type TaskUpdate } from './taskEvents.js';

export interface ClientTiming {
  /** From placement to the client's Received (default 5 ms: the client's blocking query answers at once). */
  receiveDelayMs: number;
  /** From Received to Started (default 250 ms: a raw_exec task's setup and start). */
  startDelayMs: number;
  /** From the stop to Killing (default 5 ms). */
  killDelayMs: number;
  /** From Killing to the task's exit (default 250 ms). */
  killDurationMs: number;
  /** client.go allocSyncIntv (200 ms). */
  syncIntervalMs: number;
  /** node_endpoint.go batchUpdateInterval (50 ms). */
  serverBatchMs: number;
}

export interface ClientFailure {
  exitCode: number;
  /** How long the task runs before it exits (default 0). */
  runMs: number;
}

type Phase = 'received' | 'running' | 'restarting' | 'killing' | 'dead';

interface Runner {
  readonly id: string;
  phase: Phase;
  /** Bumped at every start: a timer of an earlier run does nothing. */
  run: number;
  failure: ClientFailure | undefined;
  restartWindowStart: number;
  restartCount: number;
  deploymentId: string;
  healthReported: boolean;
}

export type Schedule = (delayMs: number, work: () => void) => void;

const isClientTerminal = (status: string | undefined): boolean => status === 'complete' || status === 'failed' || status === 'lost';

export class ActingClient {
  private readonly runners = new Map<string, Runner>();
  private queue = new Map<string, ClientReport['changes'][number][]>();
  private tickArmed = false;
  private inFlight = false;
  /** When the sync ticker last (re)started: ticks fall every syncIntervalMs from here. */
  private tickerStart: number;

  constructor(
    private readonly cluster: ClusterState,
    private readonly clock: Clock,
    private readonly random: SeededRandom,
    private readonly timing: ClientTiming,
    private readonly schedule: Schedule,
    private readonly options: { allocRoot?: string; failureFor(alloc: Allocation): ClientFailure | undefined },
  ) {
    this.tickerStart = clock.now();
  }

  /** Follows the server's view of an allocation (every Allocation event). */
  onAllocation(alloc: Allocation): void {
    const runner = this.runners.get(alloc.ID);
    const stopping = alloc.DesiredStatus === 'stop' || alloc.DesiredStatus === 'evict';
    if (runner === undefined) {
      if (isClientTerminal(alloc.ClientStatus) || alloc.NodeID !== this.cluster.nodeId) return;
      if (!stopping && alloc.ClientStatus === 'pending' && alloc.TaskStates == null) this.place(alloc);
      return;
    }
    if (stopping && (runner.phase === 'received' || runner.phase === 'running' || runner.phase === 'restarting')) {
      runner.phase = 'killing';
      this.schedule(this.timing.killDelayMs, () => this.kill(runner));
    } else if (!stopping && alloc.DeploymentID && alloc.DeploymentID !== runner.deploymentId) {
      // Moved in place into a new deployment: its health is tracked again, from now.
      runner.deploymentId = alloc.DeploymentID;
      runner.healthReported = false;
      if (runner.phase === 'running') this.watchHealth(runner, this.clock.now());
    }
  }

  /** The allocation's node went away: its runner stops reporting. */
  forget(allocId: string): void {
    this.runners.delete(allocId);
    this.queue.delete(allocId);
  }

  private place(alloc: Allocation): void {
    const runner: Runner = {
      id: alloc.ID, phase: 'received', run: 0, failure: this.options.failureFor(alloc), restartWindowStart: 0, restartCount: 0,
      deploymentId: alloc.DeploymentID ?? '', healthReported: false,
    };
    this.runners.set(alloc.ID, runner);
    this.schedule(this.timing.receiveDelayMs, () => this.receive(runner));
  }

  private allocation(runner: Runner): Allocation | undefined {
    const alloc = this.cluster.allocation(runner.id);
    if (alloc === undefined) this.runners.delete(runner.id);
    return alloc;
  }

  private tasks(alloc: Allocation): string[] {
    return (alloc.Job?.TaskGroups?.find((group) => group.Name === alloc.TaskGroup)?.Tasks ?? []).map((task) => task.Name);
  }

  private group(alloc: Allocation): JsonObject | undefined {
    return alloc.Job?.TaskGroups?.find((group) => group.Name === alloc.TaskGroup) as JsonObject | undefined;
  }

  private report(runner: Runner, update: (task: string) => TaskUpdate | undefined): void {
    const alloc = this.allocation(runner);
    if (alloc === undefined) return;
    const at = this.clock.now();
    const tasks: Record<string, TaskUpdate> = {};
    for (const task of this.tasks(alloc)) {
      const change = update(task);
      if (change !== undefined) tasks[task] = { ...change, at };
    }
    this.enqueue(runner.id, { tasks });
  }

  private receive(runner: Runner): void {
    if (runner.phase !== 'received') return;
    const alloc = this.allocation(runner);
    if (alloc === undefined) return;
    if (this.options.allocRoot !== undefined) this.makeDirectories(alloc);
    this.report(runner, () => received());
    this.schedule(this.timing.startDelayMs, () => this.start(runner));
  }

  /**
   * Task Setup: "Building Task Directory". Modes as Nomad's allocdir gives them: the allocation's own
   * directory 0755, the shared alloc/ and each task's directories 0777, so a task's unprivileged user
   * (an execution's setuser) can enter and write them.
   */
  private makeDirectories(alloc: Allocation): void {
    const allocDir = join(this.options.allocRoot!, alloc.ID);
    mkdirSync(allocDir, { recursive: true });
    chmodSync(allocDir, 0o755);
    const writable = [join(allocDir, 'alloc'), ...this.tasks(alloc).flatMap((task) => [join(allocDir, task), join(allocDir, task, 'local')])];
    for (const dir of writable) {
      mkdirSync(dir, { recursive: true });
      chmodSync(dir, 0o777);
    }
  }

  private start(runner: Runner): void {
    if (runner.phase !== 'received' && runner.phase !== 'restarting') return;
    runner.phase = 'running';
    const run = ++runner.run;
    this.report(runner, () => started());
    if (runner.failure !== undefined) {
      const failure = runner.failure;
      this.schedule(failure.runMs, () => {
        if (runner.run === run && runner.phase === 'running') this.exit(runner, failure.exitCode);
      });
      return;
    }
    this.watchHealth(runner, this.clock.now());
  }

  /** The first task exited non-zero: restarted as the group's restart policy allows, else failed for good. */
  private exit(runner: Runner, exitCode: number): void {
    const alloc = this.allocation(runner);
    if (alloc === undefined) return;
    const [first] = this.tasks(alloc);
    const policy = (this.group(alloc)?.RestartPolicy as JsonObject | null | undefined) ?? { Attempts: 0, Interval: 0, Delay: 0, Mode: 'fail' };
    const attempts = Number(policy.Attempts ?? 0);
    const now = this.clock.now();
    if (now > runner.restartWindowStart + Number(policy.Interval ?? 0) / 1e6) {
      runner.restartWindowStart = now;
      runner.restartCount = 0;
    }
    runner.restartCount += 1;
    if (attempts > 0 && runner.restartCount <= attempts) {
      // restarts.go jitter(): the delay plus up to 25% of it.
      const delayNs = Number(policy.Delay ?? 0);
      const delayMs = Math.floor(delayNs + Math.floor(this.random.next() * delayNs) * 0.25) / 1e6;
      runner.phase = 'restarting';
      this.report(runner, (task) => (task === first ? restarting(exited(exitCode), delayMs) : undefined));
      this.schedule(delayMs, () => this.start(runner));
      return;
    }
    const reason = attempts === 0
      ? 'Policy allows no restarts'
      : `Exceeded allowed attempts ${attempts} in interval ${goDuration(Number(policy.Interval ?? 0))} and mode is "fail"`;
    runner.phase = 'dead';
    const unhealthy = this.tracksHealth(alloc) && !runner.healthReported;
    this.report(runner, (task) => {
      if (task !== first) return killedAfterKilling();
      const failed = notRestarting(exited(exitCode), reason);
      return unhealthy ? { ...failed, events: [...failed.events!, ...allocUnhealthy().events!] } : failed;
    });
    if (unhealthy) this.reportHealth(runner, false);
  }

  private kill(runner: Runner): void {
    if (runner.phase !== 'killing') return;
    this.report(runner, () => killing());
    this.schedule(this.timing.killDurationMs, () => {
      if (runner.phase !== 'killing') return;
      runner.phase = 'dead';
      this.report(runner, () => killedAfterKilling());
      const alloc = this.allocation(runner);
      // Stopped before it was healthy: the health tracker reports it unhealthy.
      if (alloc !== undefined && this.tracksHealth(alloc) && !runner.healthReported) this.reportHealth(runner, false);
    });
  }

  /** Whether the client decides this allocation's deployment health from its tasks (allochealth tracker). */
  private tracksHealth(alloc: Allocation): boolean {
    if (!alloc.DeploymentID) return false;
    const group = this.group(alloc);
    const update = group?.Update as JsonObject | null | undefined;
    if (!update) return false;
    if (update.HealthCheck === 'task_states') return true;
    if (update.HealthCheck !== 'checks') return false;
    const services = [...((group!.Services as JsonObject[] | null) ?? []), ...((group!.Tasks as JsonObject[]).flatMap((t) => (t.Services as JsonObject[] | null) ?? []))];
    return !services.some((service) => ((service.Checks as unknown[] | null) ?? []).length > 0);
  }

  /** All tasks running for min_healthy_time (from `since`) without a restart: healthy. */
  private watchHealth(runner: Runner, since: number): void {
    const alloc = this.allocation(runner);
    if (alloc === undefined || !this.tracksHealth(alloc) || runner.healthReported) return;
    const run = runner.run;
    const deployment = runner.deploymentId;
    const minHealthyMs = Number((this.group(alloc)?.Update as JsonObject).MinHealthyTime ?? 0) / 1e6;
    this.schedule(Math.max(0, since + minHealthyMs - this.clock.now()), () => {
      if (runner.run !== run || runner.phase !== 'running' || runner.healthReported || runner.deploymentId !== deployment) return;
      this.reportHealth(runner, true);
    });
  }

  private reportHealth(runner: Runner, healthy: boolean): void {
    runner.healthReported = true;
    this.enqueue(runner.id, { healthy, at: this.clock.now() });
  }

  private enqueue(allocId: string, change: ClientReport['changes'][number]): void {
    const changes = this.queue.get(allocId) ?? [];
    changes.push(change);
    this.queue.set(allocId, changes);
    this.armTick();
  }

  /** The sync ticker's next tick after now, when there is something to send and no update in flight. */
  private armTick(): void {
    if (this.tickArmed || this.inFlight || this.queue.size === 0) return;
    this.tickArmed = true;
    const interval = this.timing.syncIntervalMs;
    const now = this.clock.now();
    const next = this.tickerStart + (Math.floor((now - this.tickerStart) / interval) + 1) * interval;
    this.schedule(next - now, () => this.sync());
  }

  private sync(): void {
    this.tickArmed = false;
    const reports = [...this.queue].map(([allocId, changes]) => ({ allocId, changes }));
    this.queue = new Map();
    if (reports.length === 0) return;
    const receivedAt = this.clock.now();
    this.inFlight = true;
    this.schedule(this.timing.serverBatchMs, () => {
      this.inFlight = false;
      this.cluster.applyClientUpdates(reports, receivedAt);
      // The RPC returned: the ticker starts again.
      this.tickerStart = this.clock.now();
      this.armTick();
    });
  }
}
