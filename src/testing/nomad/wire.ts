/**
 * Nomad 1.1.2's HTTP wire format: JSON bodies through the codec (no trailing newline), text/plain
 * errors, the query meta headers in Go's canonical casing, gzip when asked (gziphandler), and Go's
 * choice between Content-Length and chunked (bodies under 2 KiB written at once get a length).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { stringifyLossless } from '../losslessJson.js';

/** Go's net/http buffers this much before it switches a response to chunked encoding. */
const CHUNKING_THRESHOLD = 2048;

export interface ResponseMeta {
  /** X-Nomad-Index; with `query` also X-Nomad-Knownleader and X-Nomad-Lastcontact (query endpoints). */
  index?: number;
  query?: boolean;
}

function acceptsGzip(req: IncomingMessage): boolean {
  return /\bgzip\b/i.test(String(req.headers['accept-encoding'] ?? ''));
}

function setMeta(res: ServerResponse, meta: ResponseMeta): void {
  if (meta.index !== undefined) res.setHeader('X-Nomad-Index', String(Math.max(1, meta.index)));
  if (meta.query) {
    res.setHeader('X-Nomad-Knownleader', 'true');
    res.setHeader('X-Nomad-Lastcontact', '0');
  }
}

function send(req: IncomingMessage, res: ServerResponse, status: number, body: string): void {
  let payload: Buffer = Buffer.from(body, 'utf8');
  if (acceptsGzip(req)) {
    res.setHeader('Content-Encoding', 'gzip');
    payload = gzipSync(payload);
  }
  res.statusCode = status;
  if (body.length < CHUNKING_THRESHOLD) {
    res.setHeader('Content-Length', String(payload.length));
    res.end(payload);
  } else {
    res.write(payload);
    res.end();
  }
}

export function sendJson(req: IncomingMessage, res: ServerResponse, value: unknown, meta: ResponseMeta = {}): void {
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Vary', 'Accept-Encoding');
  setMeta(res, meta);
  send(req, res, 200, stringifyLossless(value));
}

/** Nomad's error answer: the bare message as text/plain (meta headers too on single-object 404s). */
export function sendText(req: IncomingMessage, res: ServerResponse, status: number, text: string, meta: ResponseMeta = {}): void {
  res.setHeader('Vary', 'Accept-Encoding');
  setMeta(res, meta);
  if (text !== '') res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  send(req, res, status, text);
}

/** Reads the request body as text (bounded, so a hostile client cannot exhaust memory). */
export function readBody(req: IncomingMessage, limit = 32 * 1024 * 1024): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new Error('request body too large'));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** The request's ACL token: X-Nomad-Token, else (`bearer`: Nomad 1.4+) `Authorization: Bearer` (http.go parseToken). */
export function requestToken(req: IncomingMessage, bearer: boolean): string | undefined {
  const header = req.headers['x-nomad-token'];
  const value = typeof header === 'string' ? header : undefined;
  if (value !== undefined && value !== '') return value;
  if (!bearer) return value;
  return /^bearer\s+(\S+)/i.exec(req.headers.authorization ?? '')?.[1];
}
