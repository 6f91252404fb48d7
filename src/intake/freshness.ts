/**
 * The supervisor's Horizon: when Warden may take it that nothing earlier is still on its way.
 *
 * A verdict that only time reaches (min_healthy_time served, healthy_deadline passed) at data time
 * W holds only if no update that happened before W is still in flight. Two things can hold one up:
 *
 * - Nomad's client syncs allocation updates to the servers in batches (every 200 ms, seconds under
 *   load): a settle window after W covers that. It is learned: at least `settleMs`, and as long as
 *   the longest delay between an event's time and its arrival here of the last two minutes, with a
 *   margin (so it comes back down after a stall; a reconnect's catch-up, late by the outage, is not
 *   learnt). Where the allocation's client has recorded its own decision, the copy carrying it
 *   speaks for everything up to then (src/health/nomadDecision.ts): no window is waited for that.
 * - The event stream itself (a stall, an outage, a slow link): after the window, one read of the
 *   allocations table's index (an ID prefix that matches nothing: a few bytes, however big the cluster)
 *   says how far Nomad has written; once the stream has delivered that far, every allocation waiting
 *   is confirmed at once. While the stream is down, nothing is confirmed. A namespace-scoped stream
 *   cannot see other namespaces' writes, so if it does not catch up within the window, the waiting
 *   allocations are read one by one instead, and what the reads bring is delivered first.
 *
 * Rounds share one timer and one read however many allocations wait, and a failed read is retried
 * with back-off; all of it on the injected clock.
 */
import type { Clock, TimerHandle } from '../clock/index.js';
import { WaitingQueue, type Horizon, type HorizonWaiter } from '../health/horizon.js';
import type { NomadClient } from '../nomad/client.js';
import { NomadHttpError } from '../nomad/errors.js';
import type { Allocation } from '../nomad/types.js';
import { backoffDelay } from '../nomad/backoff.js';
import type { Logger } from '../logger.js';
import { errorMessage } from '../errorMessage.js';
import type { RandomSource } from '../random.js';

export interface FreshnessOptions {
  readonly clock: Clock;
  readonly nomad: Pick<NomadClient, 'listAllocations' | 'getAllocation'>;
  /** The one namespace the event stream follows (`*`: all), or undefined when it follows several. */
  readonly namespace: string | undefined;
  /** Hands a fresher copy found by a read to the intake, before the allocation is confirmed. */
  readonly deliver: (allocation: Allocation) => void;
  readonly logger: Logger;
  /** Least settle window, ms (default 1,000: Nomad's client syncs every 200 ms). */
  readonly settleMs?: number;
  /** Longest settle window, ms (default 30,000). */
  readonly maxSettleMs?: number;
  /**
   * How long a delay seen counts for the settle window, ms on the clock (default 120,000): after a
   * stall, the window comes back down once the stall's delays are this old.
   */
  readonly lagMemoryMs?: number;
  /** Parallel reads of single allocations (default 8). */
  readonly concurrency?: number;
  /** Jitter of the retry back-off (default: processRandom). */
  readonly random?: RandomSource;
}

/**
 * A whole allocation ID no allocation has (Nomad's are random v4 UUIDs): the listing is empty, its
 * index is not. It must be one Nomad accepts: a prefix of hexadecimal pairs and dashes, else 500.
 */
const NO_ALLOCATION = '00000000-0000-0000-0000-000000000000';
/** How many recent delays the settle window remembers (at most: older than lagMemoryMs, they are forgotten anyway). */
const LAG_SAMPLES = 128;

/**
 * The longest of the last LAG_SAMPLES delays seen within `memoryMs`, kept as they come: a queue of
 * the samples that can still be the longest (each longer than every later one, and so older), so a
 * question costs O(1) on average and a sample too, whatever order delays come in.
 */
class RecentLongest {
  private readonly values: number[] = [];
  private readonly positions: number[] = [];
  private readonly times: number[] = [];
  private head = 0;
  private added = 0;

  constructor(private readonly memoryMs: number) {}

  /** The longest delay seen within the memory before `now` (0: none). */
  longestAt(now: number): number {
    while (this.head < this.values.length && (this.times[this.head] as number) < now - this.memoryMs) this.head++;
    this.compact();
    return this.values[this.head] ?? 0;
  }

  add(ms: number, now: number): void {
    const position = this.added++;
    while (this.values.length > this.head && (this.values[this.values.length - 1] as number) <= ms) {
      this.values.pop();
      this.positions.pop();
      this.times.pop();
    }
    this.values.push(ms);
    this.positions.push(position);
    this.times.push(now);
    while ((this.positions[this.head] as number) <= position - LAG_SAMPLES) this.head++;
    this.compact();
  }

  private compact(): void {
    if (this.head < LAG_SAMPLES && this.head < this.values.length) return;
    this.values.splice(0, this.head);
    this.positions.splice(0, this.head);
    this.times.splice(0, this.head);
    this.head = 0;
  }
}

export class FreshnessHorizon<W extends HorizonWaiter = HorizonWaiter> implements Horizon<W> {
  private readonly clock: Clock;
  private readonly floorMs: number;
  private readonly maxMs: number;
  /** Data time up to which every allocation is known. */
  private confirmed = Number.NEGATIVE_INFINITY;
  /** What each waiting allocation needs to know up to. */
  private readonly queue = new WaitingQueue<W>();
  /** Allocations confirmed further by a read of their own (only when the stream cannot show every write). */
  private readonly confirmedOne = new Map<W, number>();
  private onAdvance: (waiters: Iterable<W>) => void = () => undefined;
  private timer: { at: number; handle: TimerHandle } | undefined;
  private running = false;
  private failures = 0;
  private streaming = false;
  private delivered = 0;
  private readonly indexWaiters = new Set<{ index: number; resolve: (reached: boolean) => void }>();
  private streamingWaiters: (() => void)[] = [];
  private readonly lags: RecentLongest;
  /** When the stream last began streaming after not streaming: what happened before came in its catch-up. */
  private streamingSince = Number.NEGATIVE_INFINITY;
  private closed = false;

  constructor(private readonly options: FreshnessOptions) {
    this.clock = options.clock;
    this.floorMs = options.settleMs ?? 1_000;
    this.maxMs = Math.max(this.floorMs, options.maxSettleMs ?? 30_000);
    this.lags = new RecentLongest(options.lagMemoryMs ?? 120_000);
  }

  /** The settle window now: the floor, or the longest recent delay with a margin. */
  get settleMs(): number {
    return Math.min(this.maxMs, Math.max(this.floorMs, Math.ceil(this.lags.longestAt(this.clock.now()) * 1.25) + 100));
  }

  knownUpTo(waiter: W): number {
    return Math.max(this.confirmed, this.confirmedOne.get(waiter) ?? Number.NEGATIVE_INFINITY);
  }

  request(waiter: W, at: number): void {
    if (this.queue.request(waiter, at)) this.schedule();
  }

  release(waiter: W): void {
    this.queue.release(waiter);
    this.confirmedOne.delete(waiter);
  }

  connect(onAdvance: (waiters: Iterable<W>) => void): void {
    this.onAdvance = onAdvance;
  }

  /** The stream delivered everything up to this raft index (a batch, or a reconnect's listing). */
  noteDelivered(index: number): void {
    if (index <= this.delivered) return;
    this.delivered = index;
    if (this.indexWaiters.size === 0) return;
    for (const waiter of [...this.indexWaiters]) {
      if (waiter.index > index) continue;
      this.indexWaiters.delete(waiter);
      waiter.resolve(true);
    }
  }

  /** The stream is streaming (its reconnect listing delivered), or not. */
  noteStreaming(streaming: boolean): void {
    if (streaming && !this.streaming) this.streamingSince = this.clock.now();
    this.streaming = streaming;
    if (!streaming) return;
    const waiters = this.streamingWaiters;
    this.streamingWaiters = [];
    for (const resume of waiters) resume();
  }

  /**
   * How long after it happened an update arrived (live, not from a listing): the window covers it.
   * Not what happened before the stream (re)connected: those came in its catch-up, late by the
   * outage, not by how Nomad delivers.
   */
  noteLag(ms: number): void {
    if (!(ms >= 0) || !Number.isFinite(ms)) return;
    const now = this.clock.now();
    if (now - ms < this.streamingSince) return;
    this.lags.add(ms, now);
  }

  close(): void {
    this.closed = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer.handle);
    this.timer = undefined;
    for (const waiter of this.indexWaiters) waiter.resolve(false);
    this.indexWaiters.clear();
    this.streamingWaiters = [];
    this.queue.clear();
    this.confirmedOne.clear();
  }

  /** One timer: at the earliest time an allocation waits for, plus the window (later after failures). */
  private schedule(): void {
    if (this.closed || this.running) return;
    const earliest = this.queue.earliest()?.horizonDue;
    if (earliest === undefined) return;
    const retry = this.failures === 0 ? 0 : backoffDelay(this.failures, this.options.random ? { random: this.options.random } : {});
    const at = Math.max(earliest + this.settleMs, this.clock.now() + retry);
    if (this.timer?.at === at) return;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer.handle);
    const handle = this.clock.setTimeout(() => {
      this.timer = undefined;
      void this.round();
    }, Math.max(0, at - this.clock.now()));
    this.timer = { at, handle };
  }

  private async round(): Promise<void> {
    this.running = true;
    const target = this.clock.now() - this.settleMs;
    try {
      await this.untilStreaming();
      if (this.closed) return;
      if (await this.streamCaughtUp()) {
        this.confirmed = Math.max(this.confirmed, target);
        this.announce(this.queue.takeDue(target));
      } else {
        await this.readEach(target);
      }
      this.failures = 0;
    } catch (error) {
      this.failures++;
      this.options.logger.warn('could not confirm that no allocation update is in flight; retrying', { error: errorMessage(error), attempt: this.failures });
    } finally {
      this.running = false;
      this.schedule();
    }
  }

  /** Whether the stream has delivered what Nomad had written when asked (within one window). */
  private async streamCaughtUp(): Promise<boolean> {
    const { namespace } = this.options;
    if (namespace === undefined) return false;
    const { meta } = await this.options.nomad.listAllocations({ namespace, prefix: NO_ALLOCATION });
    if (meta.lastIndex <= this.delivered) return true;
    return new Promise<boolean>((resolve) => {
      const timeout = this.clock.setTimeout(() => {
        if (this.indexWaiters.delete(waiter)) resolve(false);
      }, this.settleMs);
      const waiter = {
        index: meta.lastIndex,
        resolve: (reached: boolean): void => {
          this.clock.clearTimeout(timeout);
          resolve(reached);
        },
      };
      this.indexWaiters.add(waiter);
    });
  }

  /**
   * Reads each allocation waiting up to `target`, hands over what changed, and confirms them. When a
   * read fails, they wait again for the next round.
   */
  private async readEach(target: number): Promise<void> {
    const due = this.queue.takeDue(target);
    const unread = due.filter((waiter) => (waiter.horizonDue as number) > this.knownUpTo(waiter));
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let waiter = unread[next++]; waiter !== undefined; waiter = unread[next++]) {
        try {
          this.options.deliver((await this.options.nomad.getAllocation(waiter.allocationId)).body);
        } catch (error) {
          // Garbage-collected: nothing more will come.
          if (!(error instanceof NomadHttpError && error.status === 404)) throw error;
        }
        // Released meanwhile (decided by what the read brought): nothing to remember.
        if (waiter.horizonDue !== undefined) this.confirmedOne.set(waiter, target);
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(this.options.concurrency ?? 8, unread.length) }, worker));
    } catch (error) {
      this.queue.putBack(due);
      throw error;
    }
    this.announce(due);
  }

  /** Tells the registry these allocations' horizon moved: each asks again for what it still needs. */
  private announce(due: readonly W[]): void {
    const waiters = this.queue.settle(due);
    if (waiters.length > 0) this.onAdvance(waiters);
  }

  private untilStreaming(): Promise<void> {
    if (this.streaming) return Promise.resolve();
    return new Promise((resolve) => this.streamingWaiters.push(resolve));
  }
}
