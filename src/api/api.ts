/**
 * Poseidon's public API (openHPI/poseidon api/swagger.yaml, api/websocket.schema.json) over
 * Warden's runner pools: a request handler and an upgrade handler for any node:http server, thin
 * over RunnerPools as undici's api/ is over its dispatcher. Routing, authentication, error answers
 * and metrics are here; each route's work is in environments.ts and runners.ts, an execution's
 * WebSocket in executionSocket.ts.
 *
 *   const api = new PoseidonApi({ pools, token });
 *   createServer((req, res) => void api.handle(req, res)).on('upgrade', (req, socket, head) => api.handleUpgrade(req, socket, head));
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { systemClock, type Clock } from '../clock/index.js';
import type { RunnerPools } from '../runners/pools.js';
import { registerSecret } from '../secrets.js';
import { silentLogger, structuredLogger, type LogSink, type Logger } from '../logger.js';
import { tokenCheck } from './auth.js';
import type { ApiContext, ApiRequest, EnvironmentDefaults, Handler } from './context.js';
import { deleteEnvironment, getEnvironment, health, listEnvironments, putEnvironment, statistics, version } from './environments.js';
import { ApiError, apiErrorOf, badRequest, methodNotAllowed, notFound, notRecovered, unauthorized } from './errors.js';
import { ExecutionSocket } from './executionSocket.js';
import { DEFAULT_BODY_LIMIT, refuseUpgrade, sendError } from './http.js';
import type { ApiMetrics } from './metrics.js';
import { PendingExecutions } from './pendingExecutions.js';
import { Router } from './router.js';
import { deleteRunner, execute, fileContent, listFiles, provideRunner, updateFiles, websocketTarget } from './runners.js';

export const API_BASE_PATH = '/api/v1';

export interface PoseidonApiOptions {
  pools: RunnerPools;
  /** Default: the pools' supervisor's clock is not known here; the system clock. */
  clock?: Clock;
  /** Poseidon-Token every route but /health and /version needs; none: no authentication. */
  token?: string;
  /** How runners of environments created through the API run (default: Poseidon's docker driver). */
  environmentDefaults?: EnvironmentDefaults;
  /** What GET /version answers. */
  version?: string;
  /** Poseidon's prewarmingpoolthreshold, in [0, 1): /health is 503 below it (default 0: never). */
  poolAlertThreshold?: number;
  /** Executions under a pseudo-terminal, as Poseidon runs them (default true); without one they read no input. */
  tty?: boolean;
  logger?: LogSink;
  metrics?: ApiMetrics;
  /** Largest request body, in bytes (default 64 MiB). */
  bodyLimit?: number;
  /** The server speaks TLS: WebSocket URLs are wss://. */
  secure?: boolean;
}

interface RouteEntry {
  handler: Handler;
  /** Served without the token (Poseidon's /health and /version). */
  public?: boolean;
  /** The execution WebSocket: only an upgrade request is served. */
  websocket?: boolean;
}

/** The route table: Poseidon's, under /api/v1. */
function routes(): Router<RouteEntry> {
  const runner = `${API_BASE_PATH}/runners/{runnerId}`;
  const environment = `${API_BASE_PATH}/execution-environments/{executionEnvironmentId:[0-9]+}`;
  const refusedAsPlainRequest: Handler = async () => undefined;
  return new Router<RouteEntry>()
    .add('GET', `${API_BASE_PATH}/health`, { handler: health, public: true })
    .add('GET', `${API_BASE_PATH}/version`, { handler: version, public: true })
    .add('GET', `${API_BASE_PATH}/statistics/execution-environments`, { handler: statistics })
    .add('GET', `${API_BASE_PATH}/execution-environments`, { handler: listEnvironments })
    .add('GET', environment, { handler: getEnvironment })
    .add('PUT', environment, { handler: putEnvironment })
    .add('DELETE', environment, { handler: deleteEnvironment })
    .add('POST', `${API_BASE_PATH}/runners`, { handler: provideRunner })
    .add('DELETE', runner, { handler: deleteRunner })
    .add('GET', `${runner}/files`, { handler: listFiles })
    .add('PATCH', `${runner}/files`, { handler: updateFiles })
    .add('GET', `${runner}/files/raw`, { handler: fileContent })
    .add('POST', `${runner}/execute`, { handler: execute })
    .add('GET', `${runner}/websocket`, { handler: refusedAsPlainRequest, websocket: true });
}

function splitUrl(url: string | undefined): { path: string; query: URLSearchParams } {
  const raw = url ?? '/';
  const at = raw.indexOf('?');
  return at < 0 ? { path: raw, query: new URLSearchParams() } : { path: raw.slice(0, at), query: new URLSearchParams(raw.slice(at + 1)) };
}

/** Reads what is left of a body (at most `limit` bytes) so an early answer does not break the client's write. */
function drain(req: IncomingMessage, limit: number): Promise<void> {
  if (req.readableEnded || req.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.destroy();
        resolve();
      }
    });
    req.once('end', () => resolve());
    req.once('close', () => resolve());
    req.once('error', () => resolve());
  });
}

export class PoseidonApi {
  private readonly context: ApiContext;
  private readonly router = routes();
  private readonly authorized: ReturnType<typeof tokenCheck>;
  private readonly logger: Logger;
  private readonly tty: boolean;
  private readonly sockets = new Set<ExecutionSocket>();
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 16 * 1024 * 1024 });
  private readonly unsweep: () => void;
  private closed = false;

  constructor(options: PoseidonApiOptions) {
    // The token is a secret like Nomad's: out of every error and log line however it got there.
    registerSecret(options.token);
    this.logger = options.logger === undefined ? silentLogger : structuredLogger(options.logger, [options.token]);
    this.authorized = tokenCheck(options.token);
    this.tty = options.tty ?? true;
    const pending = new PendingExecutions();
    this.context = {
      pools: options.pools,
      clock: options.clock ?? systemClock,
      pending,
      metrics: options.metrics,
      logger: this.logger,
      environmentDefaults: options.environmentDefaults ?? { driver: 'docker' },
      version: options.version ?? 'unknown',
      poolAlertThreshold: options.poolAlertThreshold ?? 0,
      bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
      secure: options.secure ?? false,
    };
    // Stored executions go with their runner.
    const subscription = options.pools.changes$.subscribe(() => pending.sweep((runnerId) => options.pools.runner(runnerId) !== undefined));
    this.unsweep = () => subscription.unsubscribe();
  }

  /** Executions whose WebSocket is open now. */
  get activeExecutions(): number {
    return this.sockets.size;
  }

  /** Serves one request (every path: an unknown one is Poseidon's empty 404). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { clock, metrics, bodyLimit } = this.context;
    const started = clock.now();
    const method = req.method ?? 'GET';
    let route = 'unmatched';
    res.once('finish', () => {
      metrics?.request(route, method, res.statusCode, clock.now() - started);
      this.logger.debug('request', { method, route, status: res.statusCode, durationMs: clock.now() - started });
    });
    const { path, query } = splitUrl(req.url);
    const match = this.router.match(method, path);
    try {
      if ('status' in match) {
        if (match.status === 405) res.setHeader('allow', match.allow?.join(', ') ?? '');
        throw match.status === 404 ? notFound() : methodNotAllowed();
      }
      route = match.route.pattern;
      const request: ApiRequest = { req, res, params: match.params, query };
      this.authorize(match.route.handler, req, route);
      if (match.route.handler.websocket === true) {
        websocketTarget(this.context, request);
        throw badRequest('this route is a WebSocket: connect to it with an Upgrade request');
      }
      if (match.route.handler.public !== true) await this.recovered();
      await match.route.handler.handler(this.context, request);
    } catch (error) {
      const answer = apiErrorOf(error);
      // An empty pool is logged where it is met (provideRunner), as Poseidon does.
      if (answer.status >= 500 && answer.errorCode !== 'NOMAD_OVERLOAD') this.logger.warn('request failed', { method, route, status: answer.status, error: answer.message });
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (answer.status === 413) {
        // Answered at once; the rest of the body is read and dropped so the client sees the answer, not a reset.
        sendError(res, answer, { connection: 'close' });
        req.resume();
        return;
      }
      await drain(req, bodyLimit);
      if (!res.writableEnded && !res.destroyed) sendError(res, answer);
    }
  }

  /** Serves an upgrade request: the execution WebSocket, or the refusal Poseidon would answer. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const { clock, metrics } = this.context;
    const started = clock.now();
    const method = req.method ?? 'GET';
    const { path, query } = splitUrl(req.url);
    const match = this.router.match(method, path);
    const route = 'status' in match ? 'unmatched' : match.route.pattern;
    const done = (status: number): void => metrics?.request(route, method, status, clock.now() - started);
    socket.on('error', () => undefined);
    try {
      if ('status' in match) throw match.status === 404 ? notFound() : methodNotAllowed();
      this.authorize(match.route.handler, req, route);
      if (match.route.handler.websocket !== true) throw badRequest('this route is not a WebSocket');
      if (this.closed) throw new ApiError(503, 'the server is shutting down', 'UNKNOWN');
      const { runner, executionId } = websocketTarget(this.context, { params: match.params, query });
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        done(101);
        const request = this.context.pending.take(runner.id, executionId);
        if (request === undefined) {
          // Another connection took it in the meantime.
          ws.close(1008, 'execution id unknown');
          return;
        }
        const execution = new ExecutionSocket(ws, runner, request, {
          clock,
          tty: this.tty,
          onEnd: (outcome, durationMs) => {
            this.sockets.delete(execution);
            metrics?.execution(runner.environmentId, outcome, durationMs);
            this.logger.debug('execution ended', { runnerId: runner.id, executionId, outcome, durationMs });
          },
          onBytes: (stream, bytes) => metrics?.executionBytes(stream, bytes),
          onProblem: (message, error) => this.logger.warn(message, { runnerId: runner.id, executionId, error }),
        });
        this.sockets.add(execution);
        this.logger.info('running execution', { runnerId: runner.id, executionId });
        execution.start();
      });
    } catch (error) {
      const answer = apiErrorOf(error);
      done(answer.status);
      refuseUpgrade(socket, answer);
    }
  }

  /**
   * Stops serving executions: each open WebSocket gets an `error` message saying the server shuts
   * down and a close (1001), its command is ended. Resolves once every client answered the close,
   * or `graceMs` later (on the clock) with the rest dropped. Requests still answered meanwhile are
   * the server's business (close it first).
   */
  async close(graceMs = 2_000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.unsweep();
    const sockets = [...this.sockets];
    this.sockets.clear();
    const { clock } = this.context;
    let timer: unknown;
    const grace = new Promise<void>((resolve) => (timer = clock.setTimeout(resolve, graceMs)));
    await Promise.race([Promise.all(sockets.map((socket) => socket.shutDown())), grace]);
    clock.clearTimeout(timer);
    for (const socket of sockets) socket.terminate();
    this.wss.close();
  }

  /**
   * The pools' routes wait for the cluster's pools to be read at the start; while Nomad cannot be
   * read (recovery retries meanwhile), they answer 503 with Nomad's error at once.
   */
  private async recovered(): Promise<void> {
    const { pools } = this.context;
    if (pools.recovered) return;
    if (pools.recoveryError !== undefined) throw notRecovered(pools.recoveryError);
    await pools.ready;
  }

  private authorize(entry: RouteEntry, req: IncomingMessage, route: string): void {
    if (entry.public === true || this.authorized(req.headers)) return;
    // Never the token given: it may be the right one mistyped.
    this.logger.warn('request refused: missing or wrong Poseidon-Token', { route });
    throw unauthorized();
  }
}
