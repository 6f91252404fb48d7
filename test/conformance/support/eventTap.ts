/**
 * One raw event stream as a conformance case reads it: every NDJSON frame in order, stamped with the
 * target's time when it arrived, and waits for the frames a case expects.
 */
import type { WireResponse } from '../../../src/nomad/wire.js';
import { parseLossless } from '../../../src/testing/losslessJson.js';
import type { StreamEvent as BrokerEvent } from '../../../src/testing/nomad/eventBroker.js';

/** An event as the wire carries it (the fields FakeNomad's broker publishes), its payload keyed by topic. */
export interface StreamEvent extends Omit<BrokerEvent, 'Payload'> {
  Payload: Record<string, Record<string, unknown>>;
}

export interface Frame {
  /** Absent on a heartbeat (`{}`). */
  readonly Index?: number;
  readonly Events?: readonly StreamEvent[];
  /** The target's time when the frame arrived. */
  readonly at: number;
  /** The line as it came. */
  readonly line: string;
}

type Within = <T>(what: string, ms: number, work: Promise<T>) => Promise<T>;

export class EventTap {
  readonly frames: Frame[] = [];
  /** Resolves once the first frame (Nomad's immediate heartbeat) arrived. */
  readonly opened: Promise<void>;
  /** Text after the last newline when the stream ended (Nomad appends an error text there). */
  tail = '';
  ended = false;
  readonly status: number;
  readonly headers: WireResponse['headers'];
  private readonly waiters = new Set<() => void>();

  constructor(
    response: WireResponse,
    private readonly now: () => number,
    private readonly abort: () => void,
    private readonly within: Within,
  ) {
    this.status = response.statusCode;
    this.headers = response.headers;
    let resolveOpened!: () => void;
    this.opened = new Promise((resolve) => (resolveOpened = resolve));
    void this.read(response, resolveOpened);
  }

  private async read(response: WireResponse, opened: () => void): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.chunks()) {
        buffer += decoder.decode(chunk, { stream: true });
        let newline: number;
        while ((newline = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          const value = parseLossless(line) as { Index?: number | bigint; Events?: StreamEvent[] };
          const frame: Frame = { at: this.now(), line, ...(value.Events ? { Index: Number(value.Index), Events: value.Events } : {}) };
          this.frames.push(frame);
          opened();
          this.wake();
        }
      }
    } catch {
      // aborted by close()
    }
    this.tail = buffer;
    this.ended = true;
    opened();
    this.wake();
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  /** Data frames (no heartbeats) holding at least one event that `keep` accepts, with only those events. */
  data(keep: (event: StreamEvent) => boolean = () => true): Frame[] {
    return this.frames.flatMap((frame) => {
      const events = (frame.Events ?? []).filter(keep);
      return events.length === 0 ? [] : [{ ...frame, Events: events }];
    });
  }

  /** Resolves with the frames once `done(frames)` holds; rejects after `ms` of target time. */
  until(what: string, done: (frames: readonly Frame[]) => boolean, ms = 30_000): Promise<Frame[]> {
    const work = new Promise<Frame[]>((resolve, reject) => {
      const check = (): void => {
        if (done(this.frames)) {
          this.waiters.delete(check);
          resolve(this.frames);
        } else if (this.ended) {
          this.waiters.delete(check);
          reject(new Error(`${what}: the stream ended first (${this.tail})`));
        }
      };
      this.waiters.add(check);
      check();
    });
    return this.within(what, ms, work).catch((error: unknown) => {
      throw new Error(`${error instanceof Error ? error.message : String(error)}; frames: ${this.frames.map((f) => f.line.slice(0, 300)).join('\n').slice(-6_000)}`);
    });
  }

  close(): void {
    this.abort();
  }
}

/** The events of a job (its own, and those of its allocations, evaluations, deployments). */
export function ofJob(jobId: string): (event: StreamEvent) => boolean {
  return (event) => {
    const payload = event.Payload[event.Topic] ?? {};
    return event.Topic === 'Job' ? event.Key === jobId : payload.JobID === jobId;
  };
}
