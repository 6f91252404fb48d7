/**
 * The supervisor's Horizon: when Warden may take it that nothing earlier is still on its way.
 *
 * A verdict that only time reaches (min_healthy_time served, healthy_deadline passed) at data time
 * W holds only if no update that happened before W is still in flight. Two things can hold one up:
 *
 * - Nomad's client syncs allocation updates to the servers in batches (every 200 ms, seconds under
 *   load): a settle window after W covers that. It is learned: at least `settleMs`, and as long as
 *   the longest recent delay between an event's time and its arrival here, with a margin.
 * - The event stream itself (a stall, an outage, a slow link): after the window, one read of the
 *   allocations table's index (a prefix that matches nothing: a few bytes, however big the cluster)
 *   says how far Nomad has written; once the stream has delivered that far, every allocation waiting
 *   is confirmed at once. While the stream is down, nothing is confirmed. A namespace-scoped stream
 *   cannot see other namespaces' writes, so if it does not catch up within the window, the waiting
 *   allocations are read one by one instead, and what the reads bring is delivered first.
 *
 * Rounds share one timer and one read however many allocations wait, and a failed read is retried
 * with back-off; all of it on the injected clock.
 */
import type { Clock, TimerHandle } from '../clock/index.js';
import type { Horizon } from '../health/horizon.js';
import type { NomadClient } from '../nomad/client.js';
import { NomadHttpError } from '../nomad/errors.js';
import type { Allocation } from '../nomad/types.js';
import { backoffDelay } from '../nomad/backoff.js';
import type { Logger } from '../supervisor/logger.js';
import { errorMessage } from '../errorMessage.js';

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
  /** Parallel reads of single allocations (default 8). */
  readonly concurrency?: number;
  /** Jitter of the retry back-off (default Math.random). */
  readonly random?: () => number;
}

/** A prefix no allocation ID (hexadecimal and dashes) has: the listing is empty, its index is not. */
const NO_ALLOCATION = 'zz';
/** How many recent delays the settle window remembers. */
const LAG_SAMPLES = 128;

export class FreshnessHorizon implements Horizon {
  private readonly clock: Clock;
  private readonly floorMs: number;
  private readonly maxMs: number;
  /** Data time up to which every allocation is known. */
  private confirmed = Number.NEGATIVE_INFINITY;
  /** Allocations confirmed further by a read of their own. */
  private readonly confirmedOne = new Map<string, number>();
  /** What each waiting allocation needs to know up to. */
  private readonly waiting = new Map<string, number>();
  private onAdvance: (allocationIds: Iterable<string>) => void = () => undefined;
  private timer: { at: number; handle: TimerHandle } | undefined;
  private running = false;
  private failures = 0;
  private streaming = false;
  private delivered = 0;
  private readonly indexWaiters = new Set<{ index: number; resolve: (reached: boolean) => void }>();
  private streamingWaiters: (() => void)[] = [];
  private readonly lags: number[] = [];
  private closed = false;

  constructor(private readonly options: FreshnessOptions) {
    this.clock = options.clock;
    this.floorMs = options.settleMs ?? 1_000;
    this.maxMs = Math.max(this.floorMs, options.maxSettleMs ?? 30_000);
  }

  /** The settle window now: the floor, or the longest recent delay with a margin. */
  get settleMs(): number {
    const longest = this.lags.length === 0 ? 0 : Math.max(...this.lags);
    return Math.min(this.maxMs, Math.max(this.floorMs, Math.ceil(longest * 1.25) + 100));
  }

  knownUpTo(allocationId: string): number {
    return Math.max(this.confirmed, this.confirmedOne.get(allocationId) ?? Number.NEGATIVE_INFINITY);
  }

  request(allocationId: string, at: number): void {
    this.waiting.set(allocationId, at);
    this.schedule();
  }

  release(allocationId: string): void {
    this.waiting.delete(allocationId);
    this.confirmedOne.delete(allocationId);
  }

  connect(onAdvance: (allocationIds: Iterable<string>) => void): void {
    this.onAdvance = onAdvance;
  }

  /** The stream delivered everything up to this raft index (a batch, or a reconnect's listing). */
  noteDelivered(index: number): void {
    if (index <= this.delivered) return;
    this.delivered = index;
    for (const waiter of [...this.indexWaiters]) {
      if (waiter.index > index) continue;
      this.indexWaiters.delete(waiter);
      waiter.resolve(true);
    }
  }

  /** The stream is streaming (its reconnect listing delivered), or not. */
  noteStreaming(streaming: boolean): void {
    this.streaming = streaming;
    if (!streaming) return;
    const waiters = this.streamingWaiters;
    this.streamingWaiters = [];
    for (const resume of waiters) resume();
  }

  /** How long after it happened an update arrived (live, not from a listing): the window covers it. */
  noteLag(ms: number): void {
    if (!(ms >= 0) || !Number.isFinite(ms)) return;
    this.lags.push(ms);
    if (this.lags.length > LAG_SAMPLES) this.lags.shift();
  }

  close(): void {
    this.closed = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer.handle);
    this.timer = undefined;
    for (const waiter of this.indexWaiters) waiter.resolve(false);
    this.indexWaiters.clear();
    this.streamingWaiters = [];
    this.waiting.clear();
  }

  /** One timer: at the earliest time an allocation waits for, plus the window (later after failures). */
  private schedule(): void {
    if (this.closed || this.running || this.waiting.size === 0) return;
    let earliest = Number.POSITIVE_INFINITY;
    for (const [id, at] of this.waiting) if (at > this.knownUpTo(id)) earliest = Math.min(earliest, at);
    if (earliest === Number.POSITIVE_INFINITY) return;
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
        this.announce((id, at) => at <= target);
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

  /** Reads each allocation waiting up to `target`, hands over what changed, and confirms them. */
  private async readEach(target: number): Promise<void> {
    const due = [...this.waiting].filter(([id, at]) => at <= target && at > this.knownUpTo(id)).map(([id]) => id);
    const read = new Set(due);
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let id = due[next++]; id !== undefined; id = due[next++]) {
        try {
          this.options.deliver((await this.options.nomad.getAllocation(id)).body);
        } catch (error) {
          // Garbage-collected: nothing more will come.
          if (!(error instanceof NomadHttpError && error.status === 404)) throw error;
        }
        this.confirmedOne.set(id, target);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.options.concurrency ?? 8, due.length) }, worker));
    this.announce((id) => read.has(id));
  }

  private announce(which: (id: string, at: number) => boolean): void {
    const ids = [...this.waiting].filter(([id, at]) => which(id, at)).map(([id]) => id);
    for (const id of ids) this.waiting.delete(id);
    if (ids.length > 0) this.onAdvance(ids);
  }

  private untilStreaming(): Promise<void> {
    if (this.streaming) return Promise.resolve();
    return new Promise((resolve) => this.streamingWaiters.push(resolve));
  }
}
