/**
 * A recording played back under the transport instead of the network: each request gets the
 * recorded answer to the same request (same server, method, path and query), at the recorded time
 * on the replay's clock; a streamed body gives its chunks at their times. Everything above the wire
 * (status handling, JSON, the event stream's framing and resume, time limits) runs as it did.
 *
 * Answers to one request are given in the order they were recorded. A plain GET asked more often
 * than recorded (a command that reads differently from the recorded one: a gate over a watch's
 * recording) gets the answer the recording had at that time. A plain request the recording never
 * saw fails at once, as a connection that could not be made, naming it; a blocking query or stream
 * it never saw gets no answer, as from a server that holds it. Both are counted in `misses`. What
 * Warden itself cut short while recording gets no answer either: the same time limit cuts it again.
 * The back-off jitter draws come back in the recorded order (then from a fixed seed), so reconnects
 * happen when they did.
 */
import type { Clock } from '../../clock/index.js';
import { seededRandom } from '../../random.js';
import type { NomadWire, WireLayer, WireRequest, WireResponse } from '../wire.js';
import type { BodyEntry, ChunkEntry, EndEntry, FailureEntry, RecordingEntry, ResponseEntry, TrafficRecording } from './format.js';

/** What Warden reads to learn the cluster's Nomad release (src/nomad/clusterVersion.ts). */
const RELEASE_READS: ReadonlySet<string> = new Set(['/v1/agent/self', '/v1/agent/members', '/v1/nodes']);

interface Exchange {
  readonly head: ResponseEntry | FailureEntry;
  body?: BodyEntry;
  readonly chunks: ChunkEntry[];
  end?: EndEntry;
  used: boolean;
}

function keyOf(origin: string, method: string, path: string): string {
  return `${origin} ${method} ${path}`;
}

/** A blocking query or the event stream: asked again, it would be a different question. */
function isRepeatable(method: string, path: string): boolean {
  return method === 'GET' && !/[?&]index=/.test(path);
}

/**
 * Resolves at `time` on the clock (`Infinity`: never); rejects with the signal's reason if it aborts
 * first, or with `closed` when the wire is closed.
 */
function until(clock: Clock, time: number, signal: AbortSignal, pending: Set<(error: Error) => void>): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  if (time <= clock.now()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = Number.isFinite(time) ? clock.setTimeout(() => done(resolve), time - clock.now()) : undefined;
    const onAbort = (): void => done(() => reject(signal.reason as Error));
    const onClose = (error: Error): void => done(() => reject(error));
    const done = (then: () => void): void => {
      if (timer !== undefined) clock.clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      pending.delete(onClose);
      then();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    pending.add(onClose);
  });
}

/** The error a recorded failure stood for: the transport wraps it as it wrapped the original. */
class RecordedFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RecordedFailure';
  }
}

/** An answer of 404 with `message` as its body. */
function unanswerable(message: string): WireResponse {
  return {
    statusCode: 404,
    headers: { 'content-type': 'text/plain' },
    text: async () => message,
    chunks: async function* () {
      yield new TextEncoder().encode(message);
    },
  };
}

export class ReplayWire implements NomadWire {
  /** Give it as the transports' `wire` in place of the network. */
  readonly layer: WireLayer = () => this;
  /**
   * Requests the recording had no answer for (`METHOD origin path`), in the order asked while it
   * lasted: what a command stopping asks after the recording's end is past it, not missing from it.
   */
  readonly misses: string[] = [];
  /** Give it as the back-off jitter source. */
  readonly random = (): number => this.draws.shift() ?? this.afterDraws();
  private readonly exchanges = new Map<string, Exchange[]>();
  private readonly draws: number[] = [];
  /** The draws after the recorded ones run out: the same every replay. */
  private readonly afterDraws = seededRandom(1);
  private readonly waiting = new Set<(error: Error) => void>();
  private readonly start: number;
  private readonly endsAt: number;

  constructor(
    recording: TrafficRecording,
    private readonly clock: Clock,
  ) {
    this.start = recording.header.start;
    this.endsAt = recording.endsAt;
    const byId = new Map<number, Exchange>();
    for (const entry of recording.entries) this.take(entry, byId);
  }

  async send(request: WireRequest): Promise<WireResponse> {
    const { origin, method, path, signal } = request;
    const exchange = this.answerFor(origin, method, path);
    if (exchange === undefined) {
      // Recordings made before Warden asked the cluster its release hold no answer to these: the
      // question is answered as one no retry can mend (a 404), and the release is judged unknown
      // (today's rules) at once, as when it was recorded.
      if (method === 'GET' && RELEASE_READS.has(path.split('?')[0] as string)) return unanswerable(`the recording has no answer to ${method} ${path} (recorded before Warden asked Nomad's version)`);
      if (this.clock.now() <= this.endsAt) this.misses.push(`${method} ${origin}${path}`);
      if (isRepeatable(method, path)) throw new RecordedFailure(`the recording has no answer to ${method} ${path}`);
    }
    if (exchange === undefined || ('aborted' in exchange.head && exchange.head.aborted)) await this.until(Infinity, signal);
    const { head } = exchange as Exchange;
    await this.until(this.start + head.t, signal);
    if (head.type === 'failure') throw new RecordedFailure(head.error);
    return {
      statusCode: head.status,
      headers: head.headers,
      text: async () => {
        const { body, end } = exchange as Exchange;
        if (body !== undefined) {
          await this.until(this.start + body.t, signal);
          return body.text;
        }
        await this.ending(end, signal);
        return '';
      },
      chunks: () => this.chunks(exchange as Exchange, signal),
    };
  }

  /** Ends every wait: what was still waiting for an answer fails, as on a closed connection. */
  async close(): Promise<void> {
    for (const reject of [...this.waiting]) reject(new RecordedFailure('closed'));
  }

  private until(time: number, signal: AbortSignal): Promise<void> {
    return until(this.clock, time, signal, this.waiting);
  }

  private take(entry: RecordingEntry, byId: Map<number, Exchange>): void {
    if (entry.type === 'stop') return;
    if (entry.type === 'random') {
      this.draws.push(entry.value);
      return;
    }
    if (entry.type === 'response' || entry.type === 'failure') {
      const exchange: Exchange = { head: entry, chunks: [], used: false };
      byId.set(entry.id, exchange);
      const key = keyOf(entry.origin, entry.method, entry.path);
      this.exchanges.set(key, [...(this.exchanges.get(key) ?? []), exchange]);
      return;
    }
    const exchange = byId.get(entry.id);
    if (exchange === undefined) return;
    if (entry.type === 'body') exchange.body = entry;
    else if (entry.type === 'chunk') exchange.chunks.push(entry);
    else exchange.end = entry;
  }

  private answerFor(origin: string, method: string, path: string): Exchange | undefined {
    const recorded = this.exchanges.get(keyOf(origin, method, path)) ?? [];
    const next = recorded.find((exchange) => !exchange.used);
    if (next !== undefined) {
      next.used = true;
      return next;
    }
    if (!isRepeatable(method, path)) return undefined;
    const now = this.clock.now() - this.start;
    const answered = recorded.filter((exchange) => exchange.head.type === 'response' && exchange.head.t <= now);
    return answered.at(-1) ?? recorded[0];
  }

  /** How a body ends: its recorded error at its time, or never if Warden cut it or the recording stopped first. */
  private async ending(end: EndEntry | undefined, signal: AbortSignal): Promise<void> {
    if (end === undefined || end.aborted) return this.until(Infinity, signal);
    await this.until(this.start + end.t, signal);
    if (end.error !== undefined) throw new RecordedFailure(end.error);
  }

  private async *chunks(exchange: Exchange, signal: AbortSignal): AsyncIterable<Uint8Array> {
    for (const chunk of exchange.chunks) {
      await this.until(this.start + chunk.t, signal);
      yield Buffer.from(chunk.text, 'utf8');
    }
    await this.ending(exchange.end, signal);
  }
}
