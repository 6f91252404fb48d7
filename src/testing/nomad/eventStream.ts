/**
 * GET /v1/event/stream as Nomad 1.1.2 serves it: validated parameters (400 with Go's texts),
 * chunked NDJSON, `{}` at once and every 30 s on the fake's clock, the closest-batch replay from
 * the broker's buffer, then live batches filtered by topic, key and namespace. Stream faults act
 * on the lines written here. With `closeDelimited`, as Nomad 2.x serves it from a hijacked
 * connection: `Connection: close`, no chunking, never compressed, the body ends at the TCP close.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createGzip, constants as zlib } from 'node:zlib';
import type { Clock, TimerHandle } from '../../clock/index.js';
import { NomadApiError } from './errors.js';
import { batchLine, filterEvents, type EventBatch, type EventBroker, type StreamFilter } from './eventBroker.js';
import { STREAM_CLOSED_TEXT, StreamFaultState, type StreamFaultPlan } from './faults.js';

export const HEARTBEAT_INTERVAL_MS = 30_000;

export interface StreamRequest {
  readonly index: number;
  readonly filter: StreamFilter;
}

const GO_MAX_INT = 2n ** 63n - 1n;

/** Parses the query as command/agent/event_endpoint.go does; throws NomadApiError(400). */
export function parseStreamRequest(query: URLSearchParams, namespaceWildcard: boolean): StreamRequest {
  const indexText = query.get('index');
  let index = 0;
  if (indexText !== null && indexText !== '') {
    if (!/^[+-]?\d+$/.test(indexText)) throw new NomadApiError(400, `Unable to parse index: strconv.Atoi: parsing ${JSON.stringify(indexText)}: invalid syntax`);
    const value = BigInt(indexText);
    if (value > GO_MAX_INT || value < -GO_MAX_INT - 1n) throw new NomadApiError(400, `Unable to parse index: strconv.Atoi: parsing ${JSON.stringify(indexText)}: value out of range`);
    // Go converts a negative int to uint64: it lands far in the future.
    index = value < 0n ? Number.MAX_SAFE_INTEGER : Number(value);
  }
  const topics = new Map<string, string[]>();
  for (const topic of query.getAll('topic')) {
    const parts = topic.split(':');
    if (parts.length > 2) throw new NomadApiError(400, `Invalid topic query: error parsing topics: Invalid key value pair for topic, topic: ${topic}`);
    const [name = '', key = '*'] = parts;
    topics.set(name, [...(topics.get(name) ?? []), key]);
  }
  if (topics.size === 0) topics.set('*', ['*']);
  return { index, filter: { topics, namespace: query.get('namespace') || 'default', namespaceWildcard } };
}

/** The stream's status and headers; close-delimited as Nomad 2.x writes them on its hijacked connection. */
function writeStreamHead(res: ServerResponse, closeDelimited: boolean): void {
  res.statusCode = 200;
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Vary', 'Accept-Encoding');
  if (!closeDelimited) return;
  res.useChunkedEncodingByDefault = false;
  res.setHeader('Connection', 'close');
}

/** Nomad 2.x refusing a subscription (ACL): the 200 is already written, so the body just ends empty. */
export function refuseAfterHead(res: ServerResponse): void {
  writeStreamHead(res, true);
  res.end();
}

interface Sink {
  write(text: string): void;
  end(text?: string): void;
  /** Closes the connection once what was written is out, without ending the chunked body. */
  cut(): void;
  destroy(): void;
}

function cutSocket(res: ServerResponse): void {
  if (res.socket) res.socket.destroySoon();
  else res.destroy();
}

function sinkFor(req: IncomingMessage, res: ServerResponse, compressible: boolean): Sink {
  if (!compressible || !/\bgzip\b/i.test(String(req.headers['accept-encoding'] ?? ''))) {
    return { write: (text) => res.write(text), end: (text) => res.end(text), cut: () => cutSocket(res), destroy: () => res.destroy() };
  }
  res.setHeader('Content-Encoding', 'gzip');
  const gzip = createGzip();
  gzip.pipe(res);
  return {
    write: (text) => {
      gzip.write(text);
      gzip.flush(zlib.Z_SYNC_FLUSH);
    },
    end: (text) => gzip.end(text),
    cut: () => gzip.flush(zlib.Z_SYNC_FLUSH, () => cutSocket(res)),
    destroy: () => {
      gzip.destroy();
      res.destroy();
    },
  };
}

/** One open stream: writes the replay, live batches and heartbeats until closed. */
export class EventStreamSession {
  private timer: TimerHandle | undefined;
  private unlisten: (() => void) | undefined;
  private readonly sink: Sink;
  private readonly faults: StreamFaultState | undefined;
  private closed = false;

  constructor(
    req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly request: StreamRequest,
    private readonly broker: EventBroker,
    private readonly clock: Clock,
    plan: StreamFaultPlan | undefined,
    private readonly onClose: (session: EventStreamSession) => void,
    closeDelimited = false,
  ) {
    this.faults = plan && new StreamFaultState(plan);
    writeStreamHead(res, closeDelimited);
    this.sink = sinkFor(req, res, !closeDelimited);
    res.on('close', () => this.close());
  }

  start(): void {
    this.heartbeat();
    for (const batch of this.broker.replayFrom(this.request.index)) this.deliver(batch);
    if (!this.closed) this.unlisten = this.broker.listen((batch) => this.deliver(batch));
  }

  private heartbeat(): void {
    if (this.closed) return;
    if (!this.faults?.stalled) this.sink.write('{}\n');
    this.timer = this.clock.setTimeout(() => this.heartbeat(), HEARTBEAT_INTERVAL_MS);
  }

  private deliver(batch: EventBatch): void {
    if (this.closed) return;
    const events = filterEvents(batch, this.request.filter);
    if (events.length === 0) return;
    const line = batchLine(batch, events);
    if (this.faults === undefined) {
      this.sink.write(`${line}\n`);
      return;
    }
    const action = this.faults.onLine(line, events.length);
    for (const text of action.write) this.sink.write(`${text}\n`);
    if (action.partial !== undefined) this.sink.write(action.partial);
    if (action.then === 'cut') this.cut();
    if (action.then === 'error') this.end(STREAM_CLOSED_TEXT);
  }

  /** Ends the response cleanly (server shutdown), optionally with Nomad's raw error text. */
  end(text?: string): void {
    if (this.closed) return;
    this.sink.end(text);
    this.close();
  }

  /** Cuts the connection after the bytes written so far, without ending the chunked body. */
  private cut(): void {
    if (this.closed) return;
    this.sink.cut();
    this.close();
  }

  /** Drops the connection at once (the fake is closing). */
  destroy(): void {
    if (this.closed) return;
    this.sink.destroy();
    this.close();
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.unlisten?.();
    this.onClose(this);
  }
}
