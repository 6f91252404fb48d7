/**
 * Nomad's own side of a live health run, as it reaches the event stream: for every allocation of
 * the jobs watched, when its client's health decision (DeploymentStatus.Healthy) first arrived, what
 * it said and when Nomad timed it, and every "Alloc Unhealthy" event seen on the way (Nomad keeps
 * only a task's last 10 events, so a later read may have lost them); for every deployment, when
 * each status arrived. Arrival times are on this process's clock, as Warden's printed lines are.
 * Waits are on its own updates, bounded (never sleeps).
 */
import type { Subscription } from 'rxjs';
import { systemClock } from '../../../src/clock/index.js';
import { nanoTimeMs, parseNomadTime } from '../../../src/health/nomadTime.js';
import type { NomadClient } from '../../../src/nomad/client.js';
import { isAllocationEvent, isDeploymentEvent } from '../../../src/nomad/eventFrames.js';
import { nomadEventStream } from '../../../src/nomad/eventStream.js';
import type { Allocation, Deployment, TaskEvent } from '../../../src/nomad/types.js';
import { Conditions } from './conditions.js';

/** Nomad's client's health decision about one allocation. */
export interface NomadDecision {
  readonly healthy: boolean;
  /** DeploymentStatus.Timestamp (epoch ms, the client's clock). */
  readonly at: number;
  /** When the update carrying it arrived here. */
  readonly arrivedAt: number;
}

export interface ObservedAllocation {
  /** The newest copy seen. */
  latest: Allocation;
  decision: NomadDecision | undefined;
  /** "Alloc Unhealthy" event per task, as first seen. */
  readonly unhealthyEvents: Map<string, TaskEvent>;
  /** When its tasks first all ran, as seen arriving (for "mid-deployment"). */
  firstRunningArrivedAt: number | undefined;
  /** The first copy saying that a task stopped running (died, restarted, was killed): the stop's event time and the copy's arrival. */
  firstStop: { readonly at: number; readonly arrivedAt: number } | undefined;
}

/** Task events that say a task stopped running. */
const STOPPING = new Set(['Terminated', 'Driver Failure', 'Restarting', 'Not Restarting', 'Killing', 'Killed']);

export interface ObservedDeployment {
  latest: Deployment;
  /** Arrival of each status (and of "awaiting promotion": running with every canary healthy). */
  readonly arrivals: Map<string, number>;
}

/** A running deployment waiting for a manual promotion, by Nomad's counts (as the gate reads them). */
export function awaitsPromotion(deployment: Deployment): boolean {
  const groups = Object.values(deployment.TaskGroups ?? {}).filter((state) => state.DesiredCanaries > 0 && !state.Promoted);
  return deployment.Status === 'running' && groups.length > 0 && groups.every((state) => !state.AutoPromote && state.HealthyAllocs >= state.DesiredCanaries);
}

const ENDED = new Set(['successful', 'failed', 'cancelled']);

/** Whether Nomad has finished with the deployment: ended, or waiting for a person to promote it. */
export function deploymentSettled(deployment: Deployment): boolean {
  return ENDED.has(deployment.Status) || awaitsPromotion(deployment);
}

function msOf(value: unknown): number | undefined {
  const parsed = parseNomadTime(value);
  return parsed.ok && parsed.ms !== null ? parsed.ms : undefined;
}

export class HealthObserver {
  readonly allocations = new Map<string, ObservedAllocation>();
  readonly deployments = new Map<string, ObservedDeployment>();
  private readonly conditions = new Conditions();
  private subscription: Subscription | undefined;

  private constructor(private readonly prefix: string) {}

  /**
   * Follows allocations and deployments of `jobs` (their IDs start with `prefix`), from now on:
   * Nomad sends only theirs, so a busy agent does not outrun this reader.
   */
  static async start(client: NomadClient, prefix: string, jobs: readonly string[]): Promise<HealthObserver> {
    const observer = new HealthObserver(prefix);
    const { meta } = await client.listJobs(prefix);
    const topics = ['Allocation', 'Deployment'].flatMap((topic) => jobs.map((job) => `${topic}:${job}`));
    const stream = nomadEventStream(client, { topics, index: meta.lastIndex + 1 });
    let connected: () => void = () => undefined;
    const streaming = new Promise<void>((resolve) => (connected = resolve));
    const state = stream.state.subscribe((s) => {
      if (s.status === 'streaming') connected();
    });
    observer.subscription = stream.batches.subscribe((batch) => observer.take(batch.events));
    observer.subscription.add(state);
    await streaming;
    return observer;
  }

  /** Stops following; waits still pending fail. */
  stop(): void {
    this.subscription?.unsubscribe();
    this.conditions.abandon(new Error('the observer stopped'));
  }

  /** Checks the waits again (something they read besides the stream has changed). */
  recheck(): void {
    this.conditions.notify();
  }

  /** The allocations of job `jobId`. */
  allocationsOf(jobId: string): ObservedAllocation[] {
    return [...this.allocations.values()].filter((a) => a.latest.JobID === jobId);
  }

  deploymentsOf(jobId: string): ObservedDeployment[] {
    return [...this.deployments.values()].filter((d) => d.latest.JobID === jobId);
  }

  /** Resolves with `value()` once it is defined, checked at every update; rejects after `timeoutMs` naming `what`. */
  async until<T>(what: string, value: () => T | undefined, timeoutMs: number): Promise<T> {
    const found = await this.conditions.until(value, timeoutMs);
    if (found === undefined) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    return found;
  }

  private take(events: readonly unknown[]): void {
    const arrivedAt = systemClock.now();
    for (const event of events as Parameters<typeof isAllocationEvent>[0][]) {
      if (isAllocationEvent(event)) this.takeAllocation(event.Payload.Allocation, arrivedAt);
      else if (isDeploymentEvent(event)) this.takeDeployment(event.Payload.Deployment, arrivedAt);
    }
    this.recheck();
  }

  private takeAllocation(allocation: Allocation, arrivedAt: number): void {
    if (!allocation.JobID?.startsWith(this.prefix)) return;
    let seen = this.allocations.get(allocation.ID);
    if (seen === undefined) this.allocations.set(allocation.ID, (seen = { latest: allocation, decision: undefined, unhealthyEvents: new Map(), firstRunningArrivedAt: undefined, firstStop: undefined }));
    if ((allocation.ModifyIndex ?? 0) >= (seen.latest.ModifyIndex ?? 0)) seen.latest = allocation;
    const status = allocation.DeploymentStatus;
    const at = msOf(status?.Timestamp);
    if (seen.decision === undefined && typeof status?.Healthy === 'boolean' && at !== undefined) seen.decision = { healthy: status.Healthy, at, arrivedAt };
    let stoppedAt: number | undefined;
    for (const [task, state] of Object.entries(allocation.TaskStates ?? {})) {
      for (const event of state.Events ?? []) {
        if (event.Type === 'Alloc Unhealthy' && !seen.unhealthyEvents.has(task)) seen.unhealthyEvents.set(task, event);
        const at = STOPPING.has(event.Type) && event.Time !== undefined ? nanoTimeMs(event.Time) : undefined;
        if (at !== undefined && (stoppedAt === undefined || at < stoppedAt)) stoppedAt = at;
      }
    }
    if (seen.firstStop === undefined && stoppedAt !== undefined) seen.firstStop = { at: stoppedAt, arrivedAt };
    const states = Object.values(allocation.TaskStates ?? {});
    if (seen.firstRunningArrivedAt === undefined && states.length > 0 && states.some((s) => s.State === 'running')) seen.firstRunningArrivedAt = arrivedAt;
  }

  private takeDeployment(deployment: Deployment, arrivedAt: number): void {
    if (!deployment.JobID.startsWith(this.prefix)) return;
    let seen = this.deployments.get(deployment.ID);
    if (seen === undefined) this.deployments.set(deployment.ID, (seen = { latest: deployment, arrivals: new Map() }));
    if (deployment.ModifyIndex >= seen.latest.ModifyIndex) seen.latest = deployment;
    const status = awaitsPromotion(deployment) ? 'awaiting-promotion' : deployment.Status;
    if (!seen.arrivals.has(status)) seen.arrivals.set(status, arrivedAt);
  }
}
