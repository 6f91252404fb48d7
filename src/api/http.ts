/** Reading requests and writing answers on node:http, in the shapes Poseidon's handlers give them. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { STATUS_CODES } from 'node:http';
import { ApiError, badRequest } from './errors.js';

/** Bodies beyond this are refused with 413 before they are read whole (base64 files included). */
export const DEFAULT_BODY_LIMIT = 64 * 1024 * 1024;

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A status with no body (Content-Length 0, as Go's WriteHeader alone answers). */
export function sendEmpty(res: ServerResponse, status: number, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...headers, 'content-length': 0 });
  res.end();
}

export function sendError(res: ServerResponse, error: ApiError, headers: Record<string, string> = {}): void {
  const body = error.body();
  if (body === undefined) sendEmpty(res, error.status, headers);
  else {
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    sendJson(res, error.status, body);
  }
}

/** The same answer written on the raw socket of an upgrade request that is refused. */
export function refuseUpgrade(socket: Duplex, error: ApiError): void {
  const body = error.body();
  const text = body === undefined ? '' : JSON.stringify(body);
  const head = [
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}`,
    'Connection: close',
    ...(body === undefined ? [] : ['Content-Type: application/json']),
    `Content-Length: ${Buffer.byteLength(text)}`,
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${text}`);
}

/** The whole body, refused with 413 past `limit` bytes (the request left open: its answer can still be read). */
export function readBody(req: IncomingMessage, limit = DEFAULT_BODY_LIMIT): Promise<Buffer> {
  const tooLarge = (): ApiError => new ApiError(413, `the request body is larger than ${limit} bytes`);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      req.off('data', data);
      req.off('end', end);
      req.off('error', failed);
    };
    const data = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      done();
      req.pause();
      reject(tooLarge());
    };
    const end = (): void => {
      done();
      resolve(Buffer.concat(chunks));
    };
    const failed = (error: Error): void => {
      done();
      reject(error);
    };
    req.on('data', data);
    req.once('end', end);
    req.once('error', failed);
  });
}

/** The body as JSON; anything else (empty included, as Go's decoder says EOF) is a 400. */
export async function readJson(req: IncomingMessage, limit?: number): Promise<unknown> {
  const text = (await readBody(req, limit)).toString('utf8');
  if (text.trim() === '') throw badRequest('the request body is empty; expected JSON');
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw badRequest(`the request body is not valid JSON: ${(error as Error).message}`);
  }
}

/** Go's strconv.ParseBool: 1 t T TRUE true True / 0 f F FALSE false False; anything else undefined. */
export function parseGoBool(text: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
  return undefined;
}
