/**
 * The HTTP layer under NomadClient: one keep-alive undici Pool per cluster, the token header,
 * namespace/region query parameters, gzip, time limits on the injected clock, and Nomad's error
 * convention (any status but 200 is an error whose body is plain text).
 */
import type { Dispatcher } from 'undici';
import { Pool } from './undiciPool.js';
import type { Clock } from '../clock/clock.js';
// Not the clock index: it loads the RxJS scheduler, which a command line that only makes requests need not.
import { systemClock } from '../clock/systemClock.js';
import { parseRetryAfter } from './backoff.js';
import type { NomadConfig } from './config.js';
import { registerSecret } from '../secrets.js';
import { nomadAuthHeaders, nomadEndpoint } from './connection.js';
import { NomadConnectionError, NomadDecodeError, NomadHttpError, NomadTimeoutError } from './errors.js';
import { parseNomadJson, stringifyNomadJson } from './json.js';
import type { QueryMeta } from './types.js';
import { UndiciWire, headerValue, type NomadWire, type WireLayer, type WireResponse } from './wire.js';

export type QueryValue = string | number | boolean | undefined;
export type HttpMethod = 'GET' | 'PUT' | 'POST' | 'DELETE';

export interface RequestOptions {
  /** Extra query parameters; undefined values are left out. */
  query?: Readonly<Record<string, QueryValue | readonly string[]>>;
  /** Overrides the configured namespace for this call (`*` = all, where Nomad supports it). */
  namespace?: string;
  region?: string;
  signal?: AbortSignal;
  /** Time limit in ms on the transport's clock; 0 = none. Defaults to the transport's. */
  timeoutMs?: number;
}

export interface RequestWithBody extends RequestOptions {
  body?: unknown;
}

export interface NomadResponse<T> {
  body: T;
  meta: QueryMeta;
  /** Clock time the whole body had arrived, before it was decoded (the time a recording gives it). */
  receivedAt?: number;
}

/** An open streaming response (the event stream): body chunks, already gunzipped. */
export interface NomadStreamResponse {
  meta: QueryMeta;
  body: AsyncIterable<Uint8Array>;
}

export interface NomadTransportOptions {
  /** Clock for time limits (default: the system clock). */
  clock?: Clock;
  /** Concurrent connections in the pool. Blocking queries and streams each hold one. */
  connections?: number;
  /** Default time limit of an ordinary request in ms (default 60 s). */
  timeoutMs?: number;
  /** Ask for gzip on ordinary requests (default true, as the Nomad Go client does). */
  gzip?: boolean;
  /**
   * Headers every request carries besides the config's token. The same transport serves another
   * HashiCorp API this way (Consul: X-Consul-Token); they are never put in an error.
   */
  headers?: Readonly<Record<string, string>>;
  /** Prefix of the query-meta headers (default `x-nomad-`; Consul's are `x-consul-`). */
  metaHeaderPrefix?: string;
  /**
   * Wraps or replaces the network under the transport: `warden record` writes down every answer
   * read through it, `warden replay` serves a recording instead (src/nomad/recording).
   */
  wire?: WireLayer;
}

const DEFAULT_TIMEOUT_MS = 60_000;

/** Extra headers that carry a credential (X-Consul-Token, Authorization): registered for scrubbing. */
const CREDENTIAL_HEADER = /token|authorization/i;

/**
 * X-Nomad-Index / -Knownleader / -Lastcontact / -Nexttoken (undici lower-cases header names);
 * Consul's X-Consul-* with `prefix` = `x-consul-`.
 */
export function queryMetaFrom(headers: Dispatcher.ResponseData['headers'], prefix = 'x-nomad-'): QueryMeta {
  const index = Number(headerValue(headers, `${prefix}index`));
  const lastContact = Number(headerValue(headers, `${prefix}lastcontact`));
  const meta: QueryMeta = {
    lastIndex: Number.isSafeInteger(index) && index > 0 ? index : 0,
    knownLeader: headerValue(headers, `${prefix}knownleader`) === 'true',
    lastContactMs: Number.isFinite(lastContact) ? lastContact : 0,
  };
  const nextToken = headerValue(headers, `${prefix}nexttoken`);
  if (nextToken !== undefined && nextToken !== '') meta.nextToken = nextToken;
  return meta;
}

/** An AbortSignal that fires on the caller's signal or after `timeoutMs` on `clock`. */
class Deadline {
  readonly controller = new AbortController();
  private timer: unknown;
  timedOut = false;
  private readonly onAbort = (): void => this.controller.abort(this.caller?.reason);

  constructor(
    private readonly clock: Clock,
    timeoutMs: number,
    private readonly caller: AbortSignal | undefined,
  ) {
    if (caller?.aborted) this.controller.abort(caller.reason);
    else caller?.addEventListener('abort', this.onAbort, { once: true });
    if (timeoutMs > 0) {
      this.timer = clock.setTimeout(() => {
        this.timedOut = true;
        this.controller.abort();
      }, timeoutMs);
    }
  }

  clearTimer(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  dispose(): void {
    this.clearTimer();
    this.caller?.removeEventListener('abort', this.onAbort);
  }
}

export class NomadTransport {
  private readonly network: NomadWire;
  private readonly wire: NomadWire;
  private readonly origin: string;
  private readonly clock: Clock;
  private readonly timeoutMs: number;
  private readonly gzip: boolean;
  private readonly headers: Record<string, string>;
  private readonly metaHeaderPrefix: string;

  constructor(
    private readonly config: NomadConfig,
    options: NomadTransportOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.gzip = options.gzip ?? true;
    this.headers = { ...nomadAuthHeaders(config), ...options.headers };
    for (const [name, value] of Object.entries(options.headers ?? {})) if (CREDENTIAL_HEADER.test(name)) registerSecret(value);
    this.metaHeaderPrefix = options.metaHeaderPrefix ?? 'x-nomad-';
    const endpoint = nomadEndpoint(config);
    this.origin = endpoint.origin;
    this.network = new UndiciWire(
      new Pool(endpoint.origin, {
        connections: options.connections ?? 32,
        keepAliveTimeout: 30_000,
        headersTimeout: 0, // blocking queries and the event stream wait longer than any fixed limit
        bodyTimeout: 0,
        connect: { ...endpoint.tls, ...(endpoint.socketPath === undefined ? {} : { socketPath: endpoint.socketPath }) },
      }),
    );
    this.wire = options.wire?.(this.network) ?? this.network;
  }

  /** Path with query string: the configured namespace and region, then `options.query`. */
  private pathWithQuery(path: string, options: RequestOptions): string {
    const params = new URLSearchParams();
    const namespace = options.namespace ?? this.config.namespace;
    const region = options.region ?? this.config.region;
    if (namespace !== undefined) params.set('namespace', namespace);
    if (region !== undefined) params.set('region', region);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value === undefined) continue;
      if (typeof value === 'object') for (const item of value) params.append(name, item);
      else params.set(name, String(value));
    }
    const query = params.toString();
    return query === '' ? path : `${path}?${query}`;
  }

  /** Sends a request and decodes the JSON answer; throws NomadHttpError for any status but 200. */
  async request<T>(method: HttpMethod, path: string, options: RequestWithBody = {}): Promise<NomadResponse<T>> {
    const target = this.pathWithQuery(path, options);
    const deadline = new Deadline(this.clock, options.timeoutMs ?? this.timeoutMs, options.signal);
    try {
      const response = await this.send(method, target, deadline, this.gzip, options.body);
      if (response.statusCode !== 200) throw await this.httpError(response, method, target);
      const text = await response.text();
      const receivedAt = this.clock.now();
      return { body: parseNomadJson(text) as T, meta: queryMetaFrom(response.headers, this.metaHeaderPrefix), receivedAt };
    } catch (error) {
      throw this.describe(error, method, target, deadline, options.timeoutMs ?? this.timeoutMs);
    } finally {
      deadline.dispose();
    }
  }

  /**
   * Opens a streaming GET (the event stream). Resolves once the headers are in and the status is
   * 200; the body is read by the caller and ends when `signal` aborts or the server closes.
   */
  async openStream(path: string, options: RequestOptions & { gzip?: boolean } = {}): Promise<NomadStreamResponse> {
    const target = this.pathWithQuery(path, options);
    // Only the wait for the headers is limited: the body is open-ended.
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const deadline = new Deadline(this.clock, timeoutMs, options.signal);
    try {
      const response = await this.send('GET', target, deadline, options.gzip ?? false, undefined);
      if (response.statusCode !== 200) throw await this.httpError(response, 'GET', target);
      // The caller's signal must still reach the body (it is how a stream is stopped); only the
      // wait for headers was time-limited.
      deadline.clearTimer();
      return { meta: queryMetaFrom(response.headers, this.metaHeaderPrefix), body: untilDone(response.chunks(), () => deadline.dispose()) };
    } catch (error) {
      deadline.dispose();
      throw this.describe(error, 'GET', target, deadline, timeoutMs);
    }
  }

  /** Closes the pool: open streams end, waiting requests fail. */
  async close(): Promise<void> {
    if (this.wire !== this.network) await this.wire.close();
    await this.network.close();
  }

  private send(method: HttpMethod, target: string, deadline: Deadline, gzip: boolean, body: unknown): Promise<WireResponse> {
    const headers: Record<string, string> = { ...this.headers };
    if (gzip) headers['accept-encoding'] = 'gzip';
    if (body !== undefined) headers['content-type'] = 'application/json';
    return this.wire.send({
      origin: this.origin,
      method,
      path: target,
      headers,
      body: body === undefined ? null : stringifyNomadJson(body),
      signal: deadline.controller.signal,
    });
  }

  /** The error for an answer other than 200: its status, its text, and its Retry-After on our clock. */
  private async httpError(response: WireResponse, method: string, target: string): Promise<NomadHttpError> {
    const retryAfterMs = parseRetryAfter(headerValue(response.headers, 'retry-after'), this.clock.now());
    return new NomadHttpError(response.statusCode, method, target, await readErrorText(response), { retryAfterMs });
  }

  private describe(error: unknown, method: string, target: string, deadline: Deadline, timeoutMs: number): unknown {
    if (error instanceof NomadHttpError || error instanceof NomadDecodeError) return error;
    if (deadline.timedOut) return new NomadTimeoutError(method, target, timeoutMs);
    if (deadline.controller.signal.aborted) return deadline.controller.signal.reason ?? error;
    return new NomadConnectionError(method, target, error);
  }
}

/**
 * `source` as it is, calling `done` once when it ends, fails or is left. Not an async generator: its
 * `yield*` adds promise hops to every chunk of a stream that is read for hours.
 */
function untilDone(source: AsyncIterable<Uint8Array>, done: () => void): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
      const chunks = source[Symbol.asyncIterator]();
      let finished = false;
      const finish = (): void => {
        if (finished) return;
        finished = true;
        done();
      };
      return {
        next: () =>
          chunks.next().then(
            (result) => {
              if (result.done === true) finish();
              return result;
            },
            (error: unknown) => {
              finish();
              throw error;
            },
          ),
        return: async (value?: unknown) => {
          try {
            return (await chunks.return?.(value)) ?? { done: true, value: undefined };
          } finally {
            finish();
          }
        },
      };
    },
  };
}

/** Nomad's error messages are short: read at most this much of an error body, whatever is sent. */
const ERROR_BODY_LIMIT = 64 * 1024;

async function readErrorText(response: WireResponse): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.chunks()) {
    parts.push(Buffer.from(chunk));
    size += chunk.length;
    if (size >= ERROR_BODY_LIMIT) break; // leaving the loop destroys the rest of the body
  }
  return Buffer.concat(parts).subarray(0, ERROR_BODY_LIMIT).toString('utf8');
}
