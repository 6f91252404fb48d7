/**
 * Polls Nomad's own check results for the allocations that wait on them, and feeds each one's check
 * views to the health registry when they change: what ConsulCheckFanOut does for Consul's checks.
 * Nomad serves these results one allocation at a time (no listing, no event), so an allocation is
 * asked only while it is followed (judged by Nomad checks and not yet decided) and `waiting` says it
 * needs them (its tasks run), every `intervalMs` on the clock as Nomad's own tracker reads its check
 * store (checkLookupInterval, 500 ms), with at most `concurrency` requests in flight. The timer runs
 * only while something is followed.
 */
import type { CheckView } from '../../machines/allocationHealthTypes.js';
import type { Clock, TimerHandle } from '../clock/index.js';
import type { NomadClient } from '../nomad/client.js';
import { sameChecks } from '../health/viewEquality.js';
import { checkViewsFromResults } from './checkResults.js';

export const NOMAD_CHECKS_INTERVAL_MS = 500;
export const NOMAD_CHECKS_CONCURRENCY = 8;

export interface NomadCheckPollerOptions {
  clock: Clock;
  /** Where the views go: the health registry's updateChecks. */
  listener: (allocationId: string, checks: readonly CheckView[]) => void;
  /** Whether a followed allocation needs its checks now (default: always). */
  waiting?: (allocationId: string) => boolean;
  /** Told of a failed read (the next round asks again). */
  onError?: (allocationId: string, error: unknown) => void;
  intervalMs?: number;
  concurrency?: number;
}

interface Followed {
  readonly namespace: string;
  views: readonly CheckView[];
  queued: boolean;
  reading: AbortController | undefined;
}

export class NomadCheckPoller {
  private readonly followed = new Map<string, Followed>();
  private readonly queue: string[] = [];
  private inFlight = 0;
  private timer: TimerHandle | undefined;
  private stopped = false;

  constructor(
    private readonly nomad: Pick<NomadClient, 'query'>,
    private readonly options: NomadCheckPollerOptions,
  ) {}

  /** Number of allocations followed. */
  get size(): number {
    return this.followed.size;
  }

  /** Follows an allocation; its views are none until the first answer. */
  follow(allocationId: string, namespace: string | undefined): CheckView[] {
    if (this.stopped) return [];
    if (!this.followed.has(allocationId)) this.followed.set(allocationId, { namespace: namespace || 'default', views: [], queued: false, reading: undefined });
    this.arm();
    return [];
  }

  forget(allocationId: string): void {
    // A queued id whose allocation is gone is skipped when it comes up.
    this.followed.get(allocationId)?.reading?.abort();
    this.followed.delete(allocationId);
    if (this.followed.size === 0) this.disarm();
  }

  stop(): void {
    this.stopped = true;
    for (const id of [...this.followed.keys()]) this.forget(id);
  }

  private arm(): void {
    if (this.timer !== undefined || this.stopped) return;
    this.timer = this.options.clock.setTimeout(() => this.round(), this.options.intervalMs ?? NOMAD_CHECKS_INTERVAL_MS);
  }

  private disarm(): void {
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One round: every followed allocation that waits on its checks and is not being read is queued. */
  private round(): void {
    this.timer = undefined;
    const waiting = this.options.waiting ?? (() => true);
    for (const [id, followed] of this.followed) {
      if (followed.reading !== undefined || followed.queued || !waiting(id)) continue;
      followed.queued = true;
      this.queue.push(id);
    }
    this.pump();
    if (this.followed.size > 0) this.arm();
  }

  private pump(): void {
    const concurrency = this.options.concurrency ?? NOMAD_CHECKS_CONCURRENCY;
    while (this.inFlight < concurrency && this.queue.length > 0) {
      const id = this.queue.shift() as string;
      const followed = this.followed.get(id);
      if (followed === undefined || followed.reading !== undefined) continue;
      followed.queued = false;
      void this.read(id, followed);
    }
  }

  private async read(id: string, followed: Followed): Promise<void> {
    const reading = new AbortController();
    followed.reading = reading;
    this.inFlight++;
    try {
      const { body } = await this.nomad.query<unknown>(`/v1/allocation/${encodeURIComponent(id)}/checks`, { namespace: followed.namespace, signal: reading.signal });
      const views = checkViewsFromResults(body);
      if (this.followed.get(id) === followed && !sameChecks(followed.views, views)) {
        followed.views = views;
        this.options.listener(id, views);
      }
    } catch (error) {
      if (!reading.signal.aborted) this.options.onError?.(id, error);
    } finally {
      followed.reading = undefined;
      this.inFlight--;
      this.pump();
    }
  }
}
