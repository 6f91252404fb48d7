/**
 * Nomad's event broker (nomad/stream/event_broker.go, event_buffer.go): a buffer of the last N + 1
 * published batches (N = event_buffer_size, default 100; one raft index each) and live delivery. A new
 * subscription starts at "the closest batch": the last batch at or below the requested index, the
 * oldest batch when the index is older than the buffer, the newest when it is in the future.
 */
import { stringifyLossless } from '../losslessJson.js';

export interface StreamEvent {
  Topic: string;
  Type: string;
  Key: string;
  Namespace: string;
  FilterKeys: string[] | null;
  Index: number;
  Payload: Record<string, unknown>;
}

export interface EventBatch {
  readonly Index: number;
  readonly Events: readonly StreamEvent[];
  /** The exact line a recording carried for this batch; served verbatim when nothing is filtered out. */
  readonly raw?: string;
}

/** Topic → keys; key `*` (or topic `*`) matches everything. */
export type TopicFilter = ReadonlyMap<string, readonly string[]>;

export interface StreamFilter {
  readonly topics: TopicFilter;
  /** Nomad 1.1.2 matches namespaced events only against this exact namespace ("*" included). */
  readonly namespace: string;
  /** Nomad ≥ 1.2 semantics: namespace "*" matches every namespace. */
  readonly namespaceWildcard: boolean;
}

/** The events of `batch` the filter lets through (nomad/stream/subscription.go `filter`). */
export function filterEvents(batch: EventBatch, filter: StreamFilter): readonly StreamEvent[] {
  const all = filter.topics.get('*');
  const keep = batch.Events.filter((event) => {
    const namespaceOk =
      event.Namespace === '' || event.Namespace === filter.namespace || (filter.namespaceWildcard && filter.namespace === '*');
    if (!namespaceOk) return false;
    const keys = [...(filter.topics.get(event.Topic) ?? []), ...(all ?? [])];
    return keys.some((key) => key === '*' || key === event.Key || (event.FilterKeys ?? []).includes(key));
  });
  return keep.length === batch.Events.length ? batch.Events : keep;
}

/** The NDJSON line for the events of a batch that pass (the recorded bytes when all of them do). */
export function batchLine(batch: EventBatch, events: readonly StreamEvent[]): string {
  if (events === batch.Events && batch.raw !== undefined) return batch.raw;
  return stringifyLossless({ Events: events, Index: batch.Index });
}

export type BatchListener = (batch: EventBatch) => void;

export class EventBroker {
  private readonly buffer: EventBatch[] = [];
  private readonly listeners = new Set<BatchListener>();

  constructor(readonly size = 100) {}

  publish(batch: EventBatch): void {
    if (batch.Events.length === 0) return;
    this.buffer.push(batch);
    // Nomad's buffer counts the head it has advanced past yet still serves: size + 1 items stay.
    if (this.buffer.length > this.size + 1) this.buffer.shift();
    for (const listener of [...this.listeners]) listener(batch);
  }

  /**
   * Batches from the closest one to `index` to the newest (nomad/stream/event_buffer.go
   * StartAtClosest): the head when `index` is at or before it, else the first item whose Index
   * equals `index`, else the last item below it.
   */
  replayFrom(index: number): EventBatch[] {
    const first = this.buffer[0];
    if (first === undefined || index <= first.Index) return [...this.buffer];
    for (let i = 0; i < this.buffer.length; i++) {
      const next = this.buffer[i + 1];
      if (next === undefined || index < next.Index) return this.buffer.slice(i);
      if (index === next.Index) return this.buffer.slice(i + 1);
    }
    return [];
  }

  /** Live batches from now on; returns the unsubscribe function. */
  listen(listener: BatchListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Drops every buffered batch: a new leader's buffer starts empty (see FakeNomad.restart). */
  forget(): void {
    this.buffer.length = 0;
  }

  /** Buffered batches, oldest first. */
  buffered(): readonly EventBatch[] {
    return this.buffer;
  }
}
