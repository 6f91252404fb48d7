/**
 * Nomad's event stream as a resumable RxJS Observable.
 *
 * - Framing: NDJSON cut on bytes (NdjsonDecoder); `{}` heartbeats; Nomad's raw error text at the
 *   end of a broken stream becomes a NomadStreamError.
 * - Bad input: a batch line that does not decode but names its index (`…,"Index":N}`) is skipped,
 *   reported in a batch of its own (`skipped`), and counts as delivered, on the same connection:
 *   reconnecting would only make Nomad send it again. An unusable event inside a batch is skipped
 *   alone. A line that names no batch fails the connection; attempts then back off further and
 *   further, since failures count until the stream gets past the point where it last failed.
 * - Recovery of what was skipped: after a batch (or events of one) is skipped, the watched
 *   allocations are listed, as after a reconnect, so an allocation update only that batch carried
 *   is not lost.
 * - Resume: after any error or close, wait (exponential back-off with jitter, on the injected
 *   clock; at least as long as a 429/503's Retry-After asks, up to the back-off's maximum) and
 *   reconnect from the last index seen. Nomad answers with "the closest batch" (a
 *   batch at or below the index asked for, or its whole buffer when the index is too old), so
 *   every batch below the last index is dropped, and at the last index every event already
 *   delivered (Nomad 1.1.2 sends a registration as two frames with the same index: Job, then
 *   Evaluation).
 * - Reconcile: Nomad marks no gap, so after each reconnect the watched allocations are listed and
 *   the ones that changed are delivered as synthetic `Resync` events (list, then watch).
 * - Freshness: an allocation is never delivered with a ModifyIndex at or below one already
 *   delivered.
 * - A 4xx other than 408/429 (bad topic, ACL), or a refused token reported as a 500 (Nomad up to
 *   1.9), ends the Observable with the NomadHttpError: asking again will not help. Everything else
 *   is retried.
 * - Nomad 2.x cannot send an error status once it has taken over the connection: it answers a
 *   subscription it refuses (ACL, region forwarding) with 200 and closes before the first `{}`.
 *   Such closes are counted (StreamState.emptyCloses) and retried with back-off, and their error
 *   says what they most likely mean.
 */
import { BehaviorSubject, Observable, config, defer, finalize, retry, share, throwError, timer, type Subscription } from 'rxjs';
import type { Clock } from '../clock/index.js';
import { schedulerFor, systemClock } from '../clock/index.js';
import { retryDelay, type BackoffOptions } from './backoff.js';
import type { NomadClient } from './client.js';
import { NomadDecodeError, NomadHttpError, NomadStreamError, isRetryable } from './errors.js';
import { SKIPPED_EXAMPLES, decodeFrame, isAllocationEvent, lineExcerpt, undecodableBatch, type BatchSkips, type DecodedFrame } from './eventFrames.js';
import { AllocationFreshness } from './freshness.js';
import { NdjsonDecoder } from './ndjson.js';
import { listWatchedAllocations, resyncScope, type Listing, type ResyncScope } from './resync.js';
import type { Allocation, AllocationEvent, AllocationListStub, NomadEvent } from './types.js';

export type StreamStatus = 'connecting' | 'resyncing' | 'streaming' | 'backingOff' | 'stopped' | 'failed';

export interface StreamState {
  status: StreamStatus;
  /** Index of the newest frame received (updated with each one while streaming). */
  lastIndex: number;
  /**
   * Connection attempts that failed in a row: back to 0 once a connection gets past the index where
   * the last one failed, or stays up for a heartbeat interval (so a line that fails every time keeps
   * the back-off growing).
   */
  failures: number;
  /** While backing off: the clock time of the next attempt. */
  retryAt?: number;
  /** The error behind the last failure (its message never holds the token). */
  error?: Error;
  /** Elements of Events lists that were not usable events, skipped so far (each reported once). */
  skippedEvents: number;
  /** Whole batch lines that did not decode, skipped so far (each reported once). */
  skippedBatches: number;
  /**
   * Connections in a row that Nomad closed without sending a byte (not even its first heartbeat,
   * which it writes at once): Nomad 2.x's way of refusing a subscription, most likely the token.
   */
  emptyCloses: number;
}

/** From this many empty closes in a row, the error calls it a likely refusal. */
export const EMPTY_CLOSES_SUSPECTED_REFUSAL = 2;

export interface EventBatch {
  /** Raft index of the frame; for a resync batch, the listing's X-Nomad-Index. */
  index: number;
  events: NomadEvent[];
  /** true for the synthetic allocation updates of a reconnect's listing. */
  resync: boolean;
  /**
   * What Nomad sent at this index that could not be used and was skipped (first time seen only);
   * for a resync batch, the allocations of the listing that could not be decoded.
   */
  skipped?: BatchSkips;
}

export interface EventStreamOptions {
  /** `Topic`, `Topic:Key`, `*` (Nomad's `topic` query parameter, repeatable). */
  topics: readonly string[];
  /** Default: the client's namespace; `*` = every namespace (Nomad 1.2+). */
  namespace?: string;
  /** First index to ask for (default 0: Nomad replays its whole buffer first). */
  index?: number;
  clock?: Clock;
  backoff?: BackoffOptions;
  /** Reconnect when nothing (not even a heartbeat, sent every 30 s) arrived for this long. */
  idleTimeoutMs?: number;
  /** Also list the watched allocations before the first connection (default false). */
  resyncOnStart?: boolean;
  /**
   * Which listed allocations a listing fetches and delivers (default all): a subscriber that judges
   * a few jobs of a big cluster reads those, not every allocation of the cluster, at each listing.
   */
  resyncFilter?: (stub: AllocationListStub) => boolean;
  /**
   * Ask for gzip (default false: Nomad 2.x never compresses the stream, and on a local network
   * decompressing costs more than it saves; worth it over a slow link).
   */
  gzip?: boolean;
}

export interface NomadEventStream {
  /** Batches in index order, shared between subscribers; the connection lives while subscribed. */
  readonly batches: Observable<EventBatch>;
  /** Connection state, for display; replays the current state to each subscriber. */
  readonly state: Observable<StreamState>;
  /**
   * `batches` by plain calls: each batch handed to `onBatch` as it is decoded, with no operator in
   * between (the supervisor's own source takes them so). `onError`: the stream gave up. The
   * connection lives until the returned subscription ends, shared with `batches`' subscribers.
   */
  follow(onBatch: (batch: EventBatch) => void, onError: (error: unknown) => void): Subscription;
}

const DEFAULT_IDLE_TIMEOUT_MS = 45_000;

/** Skips remembered so that a batch Nomad sends again (after a reconnect, twice) is reported once. */
const REMEMBERED_SKIPS = 256;

/**
 * Calls `onIdle` once nothing has arrived for `idleMs`. One timer per quiet stretch, not one per
 * chunk: a chunk only notes the time, and the timer, when it fires early, waits out the rest.
 */
class IdleWatch {
  private timer: unknown;
  private lastActivity = 0;

  constructor(
    private readonly clock: Clock,
    private readonly idleMs: number,
    private readonly onIdle: () => void,
  ) {}

  /** Something arrived (or waiting begins): the silence counts from now. */
  touch(): void {
    this.lastActivity = this.clock.now();
    if (this.timer === undefined) this.wait(this.idleMs);
  }

  stop(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private wait(ms: number): void {
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      const quiet = this.clock.now() - this.lastActivity;
      if (quiet >= this.idleMs) this.onIdle();
      else this.wait(this.idleMs - quiet);
    }, ms);
  }
}

/** The per-stream memory that survives reconnects: what was delivered. */
class StreamSession {
  lastIndex = 0;
  failures = 0;
  skippedEvents = 0;
  skippedBatches = 0;
  emptyCloses = 0;
  /** Frames below the index the caller asked to start from are not theirs (closest-batch replay). */
  private readonly startIndex: number;
  private needsResync: boolean;
  /** A skip was reported on this connection: list the watched allocations before reading on. */
  private relistDue = false;
  private readonly freshness = new AllocationFreshness();
  /** Events other than allocation updates delivered at lastIndex (one index can span frames). */
  private readonly deliveredAtLast = new Set<string>();
  /** The latest skips reported (`index/position/count`), oldest first. */
  private readonly reportedSkips = new Set<string>();
  /** The connection has shown it is healthy (see StreamState.failures). */
  private healthy = false;
  private linesThisConnection = 0;
  private readonly scope: ResyncScope;
  readonly state: BehaviorSubject<StreamState>;
  /** Who takes the batches (see NomadEventStream.follow). */
  readonly listeners = new Set<(batch: EventBatch) => void>();

  constructor(
    private readonly client: NomadClient,
    private readonly options: EventStreamOptions,
    private readonly clock: Clock,
  ) {
    this.startIndex = options.index ?? 0;
    this.needsResync = options.resyncOnStart ?? false;
    this.scope = resyncScope(options.topics);
    this.state = new BehaviorSubject<StreamState>({ status: 'stopped', lastIndex: 0, failures: 0, skippedEvents: 0, skippedBatches: 0, emptyCloses: 0 });
  }

  setStatus(status: StreamStatus, extra?: Partial<StreamState>): void {
    const { lastIndex, failures, skippedEvents, skippedBatches, emptyCloses } = this;
    const state = { status, lastIndex, failures, skippedEvents, skippedBatches, emptyCloses };
    this.state.next(extra === undefined ? state : { ...state, ...extra });
  }

  /**
   * One connection, its batches handed to the listeners: never completes; fails (to be retried) when
   * the stream breaks or ends.
   */
  connect(): Observable<never> {
    return new Observable<never>((subscriber) => {
      const connection = new AbortController();
      this.pump(connection, (batch) => this.deliver(batch)).catch((error: unknown) => {
        if (!subscriber.closed) subscriber.error(error);
      });
      return () => connection.abort();
    });
  }

  /**
   * A listener that throws is a bug downstream, not a fault of the connection: it is reported as RxJS
   * reports a subscriber's (its `config.onUnhandledError`, else thrown on its own), and the stream
   * goes on.
   */
  private deliver(batch: EventBatch): void {
    for (const listener of this.listeners) {
      try {
        listener(batch);
      } catch (error) {
        const report = config.onUnhandledError;
        if (report) report(error);
        else
          queueMicrotask(() => {
            throw error;
          });
      }
    }
  }

  /** Called on every failure: decides between retrying after a delay and giving up. */
  retryDelay(error: unknown, backoff: BackoffOptions | undefined): Observable<number> {
    const wrapped = error instanceof Error ? error : new Error(String(error));
    if (error instanceof NomadHttpError && !isRetryable(error)) {
      this.setStatus('failed', { error: wrapped });
      return throwError(() => error);
    }
    this.failures++;
    this.needsResync = true;
    // A 429/503 that says when to come back (Retry-After) is honoured, up to the back-off's maximum.
    const delay = retryDelay(this.failures, error, backoff);
    this.setStatus('backingOff', { retryAt: this.clock.now() + delay, error: wrapped });
    return timer(delay, schedulerFor(this.clock));
  }

  private async pump(connection: AbortController, deliver: (batch: EventBatch) => void): Promise<void> {
    this.setStatus('connecting');
    this.healthy = false;
    this.linesThisConnection = 0;
    // From the last index itself, not the next: Nomad can split one raft index over two frames (a
    // registration's Job, then its Evaluation), and a cut between them must not lose the second.
    const index = this.lastIndex > 0 ? this.lastIndex : this.startIndex;
    const request = { topics: this.options.topics, index, signal: connection.signal, gzip: this.options.gzip ?? false };
    const idleMs = this.options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    const idle = new IdleWatch(this.clock, idleMs, () => connection.abort(new NomadStreamError('idle', `event stream silent for ${idleMs} ms`)));
    try {
      idle.touch();
      const response = await this.client.openEventStream(
        this.options.namespace === undefined ? request : { ...request, namespace: this.options.namespace },
      );
      if (this.needsResync) {
        // The body waits unread while we list: silence now is ours, not the server's.
        idle.stop();
        this.setStatus('resyncing');
        const batch = await this.resync(connection.signal);
        this.needsResync = false;
        if (batch !== undefined) deliver(batch);
      }
      this.setStatus('streaming');
      idle.touch();
      const decoder = new NdjsonDecoder();
      let received = false;
      for await (const chunk of response.body) {
        idle.touch();
        if (!received && chunk.length > 0) {
          received = true;
          this.emptyCloses = 0;
        }
        for (const line of decoder.push(chunk)) this.handleLine(line, deliver);
        if (this.relistDue) {
          // What a skipped batch carried is recovered by a listing, on this connection; the body
          // waits unread meanwhile. A failure here fails the connection, whose reconnect lists anyway.
          idle.stop();
          this.relistDue = false;
          this.setStatus('resyncing');
          const batch = await this.resync(connection.signal);
          if (batch !== undefined) deliver(batch);
          this.setStatus('streaming');
          idle.touch();
        }
      }
      if (!received) throw emptyClose(++this.emptyCloses);
      throw endOfStream(decoder.end());
    } catch (error) {
      // An abort of ours (idle) carries its own reason; undici reports it as a generic abort.
      const reason: unknown = connection.signal.reason;
      throw reason instanceof NomadStreamError ? reason : error;
    } finally {
      idle.stop();
    }
  }

  private handleLine(line: string, deliver: (batch: EventBatch) => void): void {
    this.linesThisConnection++;
    let frame;
    try {
      frame = decodeFrame(line);
    } catch (error) {
      if (!(error instanceof NomadDecodeError)) throw error;
      const skipped = undecodableBatch(line, error);
      if (skipped === undefined) throw unusableLine(line, error);
      this.skipBatch(skipped, deliver);
      return;
    }
    // A heartbeat after the first line: this connection has stayed up for a heartbeat interval.
    if (frame === null) {
      if (this.linesThisConnection > 1 && this.markHealthy()) this.setStatus('streaming');
      return;
    }
    this.deliverFrame(frame, deliver);
  }

  /** Resets the failure count, once per connection; true when that changed the state. */
  private markHealthy(): boolean {
    if (this.healthy) return false;
    this.healthy = true;
    if (this.failures === 0) return false;
    this.failures = 0;
    return true;
  }

  /**
   * Moves lastIndex up to `index` (a newer frame): the connection got past where it last failed.
   * True when it moved; the caller tells the state once the frame is delivered, so that the frame's
   * verdicts do not wait on the state's subscribers and a state's lastIndex is always delivered.
   */
  private advanceTo(index: number): boolean {
    if (index <= this.lastIndex) return false;
    this.lastIndex = index;
    if (this.deliveredAtLast.size > 0) this.deliveredAtLast.clear();
    this.markHealthy();
    return true;
  }

  /** True the first time a skip is seen at or above the start index (Nomad may send a batch again). */
  private firstReport(skipped: BatchSkips): boolean {
    if (skipped.index < this.startIndex) return false;
    // One index can span two frames (a Job, then its Evaluation): the first position and the count tell them apart.
    const key = `${skipped.index}/${skipped.examples[0]?.position ?? 'batch'}/${skipped.count}`;
    if (this.reportedSkips.has(key)) return false;
    this.reportedSkips.add(key);
    if (this.reportedSkips.size > REMEMBERED_SKIPS) this.reportedSkips.delete(this.reportedSkips.values().next().value as string);
    return true;
  }

  /** An undecodable batch: reported once and counted as delivered, so resume and dedup pass it. */
  private skipBatch(skipped: BatchSkips, deliver: (batch: EventBatch) => void): void {
    const first = this.firstReport(skipped);
    if (first) this.skippedBatches++;
    const advanced = this.advanceTo(skipped.index);
    if (first) {
      this.relistAfterSkip();
      deliver({ index: skipped.index, events: [], resync: false, skipped });
    }
    if (advanced) this.setStatus('streaming');
  }

  private deliverFrame(frame: DecodedFrame, deliver: (batch: EventBatch) => void): void {
    // A frame below the last index (Nomad's closest-batch replay, a repeat) is old news for every
    // topic; at the last index only the events not yet delivered at that index are new. Allocation
    // updates are judged on their own ModifyIndex instead: in a replay they are old too, but a
    // frame that arrives out of order can still hold the newest version.
    if (frame.Index < this.startIndex) return;
    const advanced = this.advanceTo(frame.Index);
    const current = frame.Index === this.lastIndex;
    const events = frame.Events.filter((event) =>
      isAllocationEvent(event) ? this.admit(event.Payload.Allocation) : current && this.firstAtLast(event),
    );
    const skipped = frame.skipped !== undefined && this.firstReport(frame.skipped) ? frame.skipped : undefined;
    if (skipped !== undefined) {
      this.skippedEvents += skipped.count;
      this.relistAfterSkip();
      deliver({ index: frame.Index, events, resync: false, skipped });
    } else if (events.length > 0) deliver({ index: frame.Index, events, resync: false });
    if (advanced) this.setStatus('streaming');
  }

  /** Something was skipped: an allocation update it carried is recovered by listing (see pump). */
  private relistAfterSkip(): void {
    if (this.scope.kind !== 'none') this.relistDue = true;
  }

  /** True the first time this event is seen at the last index. */
  private firstAtLast(event: NomadEvent): boolean {
    const identity = `${event.Topic}\u0000${event.Key}\u0000${event.Type}`;
    if (this.deliveredAtLast.has(identity)) return false;
    this.deliveredAtLast.add(identity);
    return true;
  }

  private admit(allocation: Allocation): boolean {
    return this.freshness.admit(allocation.ID, allocation.ModifyIndex);
  }

  /** Lists the watched allocations and returns the changed ones as synthetic events. */
  private async resync(signal: AbortSignal): Promise<EventBatch | undefined> {
    const listing = await listWatchedAllocations(this.client, this.scope, {
      namespace: this.options.namespace,
      signal,
      isKnown: (id, modifyIndex) => (this.freshness.known(id) ?? -1) >= modifyIndex,
      ...(this.options.resyncFilter ? { wanted: this.options.resyncFilter } : {}),
    });
    // A full listing shows which allocations Nomad has garbage-collected: forget them, so the
    // memory of delivered versions does not grow with every allocation ever seen.
    if (this.scope.kind === 'all') this.freshness.retainOnly(listing.listed);
    const events = listing.allocations.filter((allocation) => this.admit(allocation)).map(resyncEvent);
    const skipped = undecodableAllocations(listing);
    if (skipped === undefined) return events.length === 0 ? undefined : { index: listing.index, events, resync: true };
    this.skippedEvents += skipped.count;
    return { index: listing.index, events, resync: true, skipped };
  }
}

/**
 * A line that names no batch to skip. Nomad 1.x appends its error text raw before closing (a proxy
 * may add a newline to it); anything else is a batch that cannot even be placed.
 */
function unusableLine(line: string, error: NomadDecodeError): NomadStreamError {
  if (!line.startsWith('{')) return endOfStream(line);
  return new NomadStreamError('malformed', `undecodable event stream line naming no batch index to skip: ${error.message} (near ${JSON.stringify(lineExcerpt(line, error))})`);
}

/** A 200 closed before its first byte, the `count`th time in a row. */
function emptyClose(count: number): NomadStreamError {
  const base = 'Nomad closed the event stream before sending anything, not even its first heartbeat';
  if (count < EMPTY_CLOSES_SUSPECTED_REFUSAL) return new NomadStreamError('empty', base);
  return new NomadStreamError(
    'empty',
    `${base} (${count} times in a row): likely a permission problem. Nomad 2.x refuses a subscription this way ` +
      'instead of a 403: check that the token may read the topics asked for in this namespace (read-job for Job, ' +
      'Evaluation, Allocation and Deployment; a management token for topic *), and that the region can be reached',
  );
}

function endOfStream(rest: string): NomadStreamError {
  const text = rest.trim();
  if (text === '') return new NomadStreamError('closed', 'event stream closed by the server');
  if (text.startsWith('{')) return new NomadStreamError('truncated', 'event stream ended inside a line');
  return new NomadStreamError('server-error', `event stream ended with an error from Nomad: ${text.slice(0, 500)}`);
}

/** The allocations a listing could not decode, as the skips of its batch: the count, the first few as examples. */
function undecodableAllocations({ index, undecodable }: Listing): BatchSkips | undefined {
  if (undecodable.length === 0) return undefined;
  const examples = undecodable.slice(0, SKIPPED_EXAMPLES).map(({ id, error }) => ({ index, reason: `allocation ${id}: ${error.message}`, excerpt: error.excerpt.slice(0, 120) }));
  return { index, count: undecodable.length, examples };
}

function resyncEvent(allocation: Allocation): AllocationEvent {
  return {
    Topic: 'Allocation',
    Type: 'Resync',
    Key: allocation.ID,
    Namespace: allocation.Namespace ?? '',
    FilterKeys: [allocation.JobID, allocation.DeploymentID ?? ''],
    Index: allocation.ModifyIndex,
    Payload: { Allocation: allocation },
  };
}

/**
 * The event stream of `client` for `options.topics`. Subscribing to `batches` connects; the last
 * unsubscribe disconnects; a later subscribe resumes after the last batch delivered.
 */
export function nomadEventStream(client: NomadClient, options: EventStreamOptions): NomadEventStream {
  const clock = options.clock ?? systemClock;
  const session = new StreamSession(client, options, clock);
  // The connection's life (RxJS: retries on the clock, shared); its batches go to the listeners.
  const connection = defer(() => session.connect()).pipe(
    retry({ delay: (error: unknown) => session.retryDelay(error, options.backoff) }),
    finalize(() => {
      if (session.state.value.status !== 'failed') session.setStatus('stopped');
    }),
    share(),
  );
  const follow = (onBatch: (batch: EventBatch) => void, onError: (error: unknown) => void): Subscription => {
    // Listening before connecting: the first batches may come as the connection opens. A listener
    // of its own, so that one function following twice is two listeners.
    const listener = (batch: EventBatch): void => onBatch(batch);
    session.listeners.add(listener);
    const subscription = connection.subscribe({ error: onError });
    subscription.add(() => session.listeners.delete(listener));
    return subscription;
  };
  const batches = new Observable<EventBatch>((subscriber) =>
    follow(
      (batch) => subscriber.next(batch),
      (error) => subscriber.error(error),
    ),
  );
  // Every state is a new object (setStatus): a subscriber sees each one, its lastIndex moving with the frames.
  const state = session.state.asObservable();
  return { batches, state, follow };
}
