/**
 * What lies under NomadTransport: the exchange of one request for one answer, with the answer's body
 * already gunzipped. By default the network (an undici Pool); a recorder can wrap it to write down
 * everything Warden reads, and a recording can replace it to play that back (src/nomad/recording).
 * Everything above it (status handling, JSON, the event stream's framing, time limits) runs the same
 * either way.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { createGunzip, gunzipSync } from 'node:zlib';
import { pipeline } from 'node:stream';
import type { Dispatcher, Pool } from 'undici';
import type { HttpMethod } from './transport.js';
import { request as poolRequest } from './undiciPool.js';

export interface WireRequest {
  /** scheme://host:port of the API (Nomad's, Consul's): which server is asked. */
  readonly origin: string;
  readonly method: HttpMethod;
  /** Path and query string. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | null;
  readonly signal: AbortSignal;
}

/** One answer: status and headers at once, then the body read in one of two ways. */
export interface WireResponse {
  readonly statusCode: number;
  /** Lower-case names. */
  readonly headers: IncomingHttpHeaders;
  /** The whole body as text. */
  text(): Promise<string>;
  /** The body as it arrives (a stream, or a bounded read of an error). */
  chunks(): AsyncIterable<Uint8Array>;
}

export interface NomadWire {
  send(request: WireRequest): Promise<WireResponse>;
  close(): Promise<void>;
}

/** Wraps or replaces the network under a transport (a recorder wraps it, a replay replaces it). */
export type WireLayer = (network: NomadWire) => NomadWire;

/** What a wire layer watching an answer is told of its body (tapResponse). */
export interface ResponseTap {
  /** The whole body, read as text. */
  text?(text: string): void;
  /** A piece of the body, read as it came. */
  chunk?(chunk: Uint8Array): void;
  /** The body is over: read to its end, failed (`error`), or left unread by its reader (`stopped`). */
  end?(how: { error?: unknown; stopped?: true }): void;
}

/** The same answer, its body reported to `tap` as it is read: how a layer watches without changing it. */
export function tapResponse(response: WireResponse, tap: ResponseTap): WireResponse {
  return {
    statusCode: response.statusCode,
    headers: response.headers,
    text: async () => {
      let text: string;
      try {
        text = await response.text();
      } catch (error) {
        tap.end?.({ error });
        throw error;
      }
      tap.text?.(text);
      tap.end?.({});
      return text;
    },
    chunks: () => tappedChunks(response.chunks(), tap),
  };
}

async function* tappedChunks(source: AsyncIterable<Uint8Array>, tap: ResponseTap): AsyncIterable<Uint8Array> {
  let ended = false;
  try {
    for await (const chunk of source) {
      tap.chunk?.(chunk);
      yield chunk;
    }
    ended = true;
    tap.end?.({});
  } catch (error) {
    ended = true;
    tap.end?.({ error });
    throw error;
  } finally {
    if (!ended) tap.end?.({ stopped: true });
  }
}

export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function isGzip(headers: IncomingHttpHeaders): boolean {
  return headerValue(headers, 'content-encoding')?.toLowerCase() === 'gzip';
}

/** The network: one keep-alive undici Pool per API server. */
export class UndiciWire implements NomadWire {
  constructor(private readonly pool: Pool) {}

  async send(request: WireRequest): Promise<WireResponse> {
    const { method, path, headers, body, signal } = request;
    const response = await poolRequest(this.pool, { path, method, headers, body, signal });
    const gzip = isGzip(response.headers);
    return {
      statusCode: response.statusCode,
      headers: response.headers,
      text: () => readText(response, gzip),
      chunks: () => (gzip ? pipeline(response.body, createGunzip(), () => undefined) : response.body),
    };
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}

async function readText(response: Dispatcher.ResponseData, gzip: boolean): Promise<string> {
  if (!gzip) return response.body.text();
  // Synchronous on purpose: API answers are small, and the thread-pool hop of the async form
  // costs more than it saves (and completes at an arbitrary time under load).
  return gunzipSync(Buffer.from(await response.body.arrayBuffer())).toString('utf8');
}
