/**
 * Poseidon's runner routes (internal/api/runners.go) over the pools: claim (POST /runners), destroy,
 * list / update / download files, and an execution stored for its WebSocket. A runner is found only
 * while it is claimed (Poseidon's used runners): an unknown, idle or destroyed one is 410 Gone,
 * before its request's body is looked at (as Poseidon's findRunnerMiddleware).
 */
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Clock } from '../clock/index.js';
import { NoIdleRunnerError, UnknownEnvironmentError } from '../runners/errors.js';
import type { Runner } from '../runners/runner.js';
import type { ApiContext, ApiRequest, Handler } from './context.js';
import { internalError, MESSAGES, notFound, runnerGone } from './errors.js';
import { parseGoBool, readJson, sendEmpty, sendJson } from './http.js';
import { executionRequest, runnerRequest, updateFilesRequest } from './requests.js';

/** The claimed runner a request names, else 410. */
export function claimedRunner({ pools }: ApiContext, { params }: Pick<ApiRequest, 'params'>): Runner {
  const runner = pools.runner(params.runnerId ?? '');
  if (runner === undefined || runner.state !== 'used') throw runnerGone();
  return runner;
}

/** A query flag as Poseidon reads it: ParseBool, anything unreadable the default. */
function flag(request: ApiRequest, name: string, fallback: boolean): boolean {
  return parseGoBool(request.query.get(name) ?? '') ?? fallback;
}

/** `attachment; filename="…"`, quoted safely; a name beyond ASCII also as RFC 5987 `filename*`. */
export function contentDisposition(path: string): string {
  const ascii = path.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '\\$&');
  const plain = `attachment; filename="${ascii}"`;
  return /^[\x20-\x7e]*$/.test(path) ? plain : `${plain}; filename*=UTF-8''${encodeURIComponent(path)}`;
}

export const provideRunner: Handler = async (context, request) => {
  const { pools, metrics, bodyLimit } = context;
  const body = runnerRequest(await readJson(request.req, bodyLimit));
  let runner: Runner;
  try {
    runner = pools.claim(body.executionEnvironmentId, { inactivityTimeoutS: body.inactivityTimeout });
  } catch (error) {
    const outcome = error instanceof NoIdleRunnerError ? 'no_idle_runner' : error instanceof UnknownEnvironmentError ? 'unknown_environment' : 'failed';
    metrics?.claim(body.executionEnvironmentId, outcome);
    if (error instanceof NoIdleRunnerError) context.logger.warn('no runners available', { environmentId: body.executionEnvironmentId, ...(error.reason === undefined ? {} : { reason: error.reason }) });
    throw error;
  }
  metrics?.claim(body.executionEnvironmentId, 'claimed');
  sendJson(request.res, 200, { runnerId: runner.id, mappedPorts: runner.mappedPorts });
};

/** How long DELETE waits for Nomad to confirm the purge before it answers 500 (the purge goes on being retried). */
export const DESTROY_WAIT_MS = 10_000;

/** Whether `promise` settles within `ms` on the clock. */
function within(clock: Clock, ms: number, promise: Promise<unknown>): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = clock.setTimeout(() => resolve(false), ms);
    void promise.finally(() => {
      clock.clearTimeout(timer);
      resolve(true);
    });
  });
}

export const deleteRunner: Handler = async (context, request) => {
  const runner = claimedRunner(context, request);
  context.pending.forget(runner.id);
  // From here on the runner is gone for every other request; its job's purge is retried until Nomad takes it.
  const confirmed = await within(context.clock, DESTROY_WAIT_MS, runner.destroy('the client wants to stop the runner'));
  if (!confirmed) throw internalError(`runner ${runner.id} is being destroyed; Nomad has not confirmed its purge yet (retried)`, 'NOMAD_INTERNAL_SERVER_ERROR');
  sendEmpty(request.res, 204);
};

export const listFiles: Handler = async (context, request) => {
  const runner = claimedRunner(context, request);
  const path = request.query.get('path') || './';
  const files = await runner.listFiles({ path, recursive: flag(request, 'recursive', true), privileged: flag(request, 'privilegedExecution', false) });
  sendJson(request.res, 200, { files });
};

export const updateFiles: Handler = async (context, request) => {
  const runner = claimedRunner(context, request);
  const body = updateFilesRequest(await readJson(request.req, context.bodyLimit));
  await runner.updateFiles({ delete: body.delete, copy: body.copy });
  sendEmpty(request.res, 204);
};

/** The stream's first chunk (undefined when it ends empty); rejects with its error. */
function firstChunk(stream: Readable): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const done = (): void => {
      stream.off('readable', readable);
      stream.off('end', ended);
      stream.off('error', failed);
    };
    const readable = (): void => {
      const chunk = stream.read() as Buffer | null;
      if (chunk === null) return;
      done();
      resolve(chunk);
    };
    const ended = (): void => {
      done();
      resolve(undefined);
    };
    const failed = (error: Error): void => {
      done();
      reject(error);
    };
    stream.on('readable', readable);
    stream.once('end', ended);
    stream.once('error', failed);
  });
}

export const fileContent: Handler = async (context, request) => {
  const runner = claimedRunner(context, request);
  const path = request.query.get('path') ?? '';
  const { header, content } = await runner.readFile(path, { privileged: flag(request, 'privilegedExecution', false) });
  // As Poseidon, the status waits for the content (or the command's end): a file that cannot be read is 424, not an empty 200.
  const first = await firstChunk(content);
  request.res.writeHead(200, {
    'content-type': 'application/octet-stream',
    'content-length': header.size,
    'content-disposition': contentDisposition(path),
  });
  if (first !== undefined) request.res.write(first);
  // Headers are out: a failure now can only cut the body short.
  await pipeline(content, request.res).catch(() => request.res.destroy());
};

/** The host of a WebSocket URL: the request's Host when it is one, else the address it came in on. */
function hostOf(request: ApiRequest): string {
  const host = request.req.headers.host ?? '';
  if (/^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/.test(host)) return host;
  const { localAddress, localPort } = request.req.socket;
  return localAddress?.includes(':') ? `[${localAddress}]:${localPort}` : `${localAddress}:${localPort}`;
}

export const execute: Handler = async (context, request) => {
  const runner = claimedRunner(context, request);
  const body = executionRequest(await readJson(request.req, context.bodyLimit));
  const executionId = context.pending.store(runner.id, body);
  const url = new URL(`${context.secure ? 'wss' : 'ws'}://${hostOf(request)}`);
  url.pathname = `/api/v1/runners/${encodeURIComponent(runner.id)}/websocket`;
  url.searchParams.set('executionID', executionId);
  sendJson(request.res, 200, { websocketUrl: url.toString() });
};

/** The runner and stored execution a WebSocket request names: 410 for the runner, 404 for the execution. */
export function websocketTarget(context: ApiContext, request: Pick<ApiRequest, 'params' | 'query'>): { runner: Runner; executionId: string } {
  const runner = claimedRunner(context, request);
  const executionId = request.query.get('executionID') ?? '';
  if (!context.pending.has(runner.id, executionId)) throw notFound(MESSAGES.unknownExecution);
  return { runner, executionId };
}
