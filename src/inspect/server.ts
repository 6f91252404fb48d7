/**
 * The inspection server: node:http and ws on loopback, started and stopped by its owner.
 *
 *   GET /                 the page (HTML; its script, style and icon from /app.js, /app.css, /favicon.svg)
 *   GET /api/snapshot     the model's snapshot as JSON (schema.ts)
 *   GET /api/allocations/<id>/timeline   the steps of one allocation's health machine
 *   WS  /api/live         the snapshot first, then one JSON delta per message; a client that sends
 *                         {"type":"follow","allocationId":…} also gets that allocation's timeline,
 *                         at once and after each of its changes
 *
 * A client that reads slowly does not grow memory: while its socket holds more than `highWaterBytes`
 * unsent, its deltas wait in a map keyed by what they describe (a newer delta of the same
 * allocation replaces the older), and when more than `maxPending` wait, they are dropped for one
 * fresh snapshot marked `resynced`. Requests naming another host are refused (DNS rebinding), and
 * so are websockets from another origin; the page's Content-Security-Policy allows only itself.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import type { AnyStateMachine } from 'xstate';
import type { TimerHandle } from '../clock/index.js';
import { allocationHealthMachine } from '../../machines/allocationHealth.js';
import { stateChart } from './chartSvg.js';
import type { InspectionModel } from './model.js';
import { INSPECTOR_SCHEMA_VERSION, type FollowRequest, type TimelineMessage } from './schema.js';
import { isoTime } from './time.js';
import { loadPageAssets, type PageAssets } from './assets.js';
import { InspectorServerError } from './errors.js';
import { FAVICON_SVG, pageHtml } from './page.js';

export interface InspectorServerOptions {
  model: InspectionModel;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Loopback only: 127.0.0.1 (default) or ::1. */
  host?: '127.0.0.1' | '::1';
  /** Bytes a client's socket may hold unsent before its deltas wait (default 256 KiB). */
  highWaterBytes?: number;
  /** Deltas a client may have waiting before they are replaced by one snapshot (default 2,000). */
  maxPending?: number;
  /** How often connected clients are told the time (default 1,000 ms on the model's clock; 0: never). */
  tickMs?: number;
  /** The machine whose chart the page draws (default the allocation health machine). */
  chartOf?: AnyStateMachine;
  /** Where the built app.js and app.css are (default the package's dist/inspector). */
  assetsDir?: string;
}

export { InspectorServerError };

/** One client's outbox. */
interface Client {
  readonly socket: WebSocket;
  readonly pending: Map<string, string>;
  resync: boolean;
  resyncs: number;
  /** The allocation whose timeline it asked for. */
  following: string | null;
}

/** Allocation IDs are UUIDs; anything much longer is not one. */
const MAX_ID_LENGTH = 256;
const TIMELINE_PATH = /^\/api\/allocations\/([^/]+)\/timeline$/;

function followRequest(data: unknown): FollowRequest | undefined {
  try {
    const message = JSON.parse(String(data)) as Partial<FollowRequest> | null;
    if (message?.type !== 'follow') return undefined;
    const id = message.allocationId;
    if (id === null || (typeof id === 'string' && id.length <= MAX_ID_LENGTH)) return { type: 'follow', allocationId: id };
  } catch {
    // Not JSON: ignored, like anything else a client may send.
  }
  return undefined;
}

export interface ClientBacklog {
  /** Bytes its socket holds unsent. */
  bufferedBytes: number;
  /** Deltas held back. */
  pending: number;
  /** Its deltas were dropped: a snapshot goes out once the socket has room. */
  resyncDue: boolean;
  /** Snapshots sent instead of dropped deltas. */
  resyncs: number;
}

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
};

export class InspectorServer {
  readonly url: string;
  private readonly clients = new Set<Client>();
  private readonly unsubscribe: () => void;
  private readonly highWater: number;
  private readonly maxPending: number;
  private readonly tickMs: number;
  private ticker: TimerHandle | undefined;

  private constructor(
    private readonly http: Server,
    private readonly sockets: WebSocketServer,
    private readonly model: InspectionModel,
    options: InspectorServerOptions,
  ) {
    const { address, port } = http.address() as AddressInfo;
    this.url = `http://${address.includes(':') ? `[${address}]` : address}:${port}/`;
    this.highWater = options.highWaterBytes ?? 256 * 1024;
    this.maxPending = options.maxPending ?? 2_000;
    this.tickMs = options.tickMs ?? 1_000;
    this.unsubscribe = model.subscribe((key, message) => {
      if (this.clients.size === 0) return;
      const text = model.serialize(message);
      const followedId = message.type === 'allocation' ? message.allocation.id : undefined;
      let timeline: string | undefined;
      for (const client of this.clients) {
        this.enqueue(client, key, text);
        if (followedId !== undefined && client.following === followedId) this.enqueue(client, 'timeline', (timeline ??= this.timelineText(followedId)));
      }
    });
  }

  static async start(options: InspectorServerOptions): Promise<InspectorServer> {
    const host = options.host ?? '127.0.0.1';
    if (host !== '127.0.0.1' && host !== '::1') throw new InspectorServerError(`the inspector listens on loopback only, not ${String(host)}`);
    const port = options.port ?? 0;
    if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new InspectorServerError(`invalid inspector port ${port}`);
    const assets = loadPageAssets(options.assetsDir);
    const chart = await stateChart(options.chartOf ?? allocationHealthMachine);
    const page = pageHtml(chart);
    const http = createServer();
    const sockets = new WebSocketServer({ noServer: true, maxPayload: 1024 });
    await new Promise<void>((resolve, reject) => {
      http.once('error', (error: Error) => reject(new InspectorServerError(`the inspector cannot listen on ${host}:${port}: ${error.message}`)));
      http.listen(port, host, resolve);
    });
    const ready = new InspectorServer(http, sockets, options.model, options);
    http.on('request', (req: IncomingMessage, res: ServerResponse) => ready.route(req, res, page, assets));
    http.on('upgrade', (req, socket, head) => {
      if (!ready.sameHost(req) || new URL(req.url ?? '/', 'http://x').pathname !== '/api/live' || !ready.sameOrigin(req)) {
        socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n');
        return;
      }
      sockets.handleUpgrade(req, socket, head, (ws) => ready.welcome(ws));
    });
    return ready;
  }

  /** Clients connected now. */
  get clientCount(): number {
    return this.clients.size;
  }

  /** What each client has waiting. */
  backlog(): ClientBacklog[] {
    return [...this.clients].map((client) => ({
      bufferedBytes: client.socket.bufferedAmount,
      pending: client.pending.size,
      resyncDue: client.resync,
      resyncs: client.resyncs,
    }));
  }

  async close(): Promise<void> {
    this.unsubscribe();
    this.stopTicking();
    for (const client of this.clients) client.socket.terminate();
    this.clients.clear();
    this.sockets.close();
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }

  private route(req: IncomingMessage, res: ServerResponse, page: string, assets: PageAssets): void {
    if (!this.sameHost(req)) return void res.writeHead(421, { 'content-type': 'text/plain' }).end('Misdirected request\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { allow: 'GET, HEAD' }).end();
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const timelineOf = TIMELINE_PATH.exec(path)?.[1];
    if (timelineOf !== undefined) return this.sendTimeline(res, decodeURIComponent(timelineOf));
    switch (path) {
      case '/':
        return this.send(res, 'text/html; charset=utf-8', page, {
          'content-security-policy':
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        });
      case '/app.js':
        return this.send(res, 'text/javascript; charset=utf-8', assets.script);
      case '/app.css':
        return this.send(res, 'text/css; charset=utf-8', assets.style);
      case '/favicon.svg':
        return this.send(res, 'image/svg+xml', FAVICON_SVG);
      case '/api/snapshot':
        return this.send(res, 'application/json; charset=utf-8', this.model.serialize(this.model.snapshot()));
      default:
        return this.send(res, 'text/plain; charset=utf-8', 'Not found\n', {}, 404);
    }
  }

  private sendTimeline(res: ServerResponse, allocationId: string): void {
    const timeline = this.model.timeline(allocationId);
    const type = 'application/json; charset=utf-8';
    if (timeline === undefined) return this.send(res, type, JSON.stringify({ error: 'no timeline for this allocation' }), {}, 404);
    const now = isoTime(this.model.clock.now());
    this.send(res, type, this.model.serialize({ schemaVersion: INSPECTOR_SCHEMA_VERSION, now, timeline }));
  }

  private timelineText(allocationId: string): string {
    const message: TimelineMessage = { type: 'timeline', now: isoTime(this.model.clock.now()), allocationId, timeline: this.model.timeline(allocationId) ?? null };
    return this.model.serialize(message);
  }

  private send(res: ServerResponse, type: string, body: string, headers: Record<string, string> = {}, status = 200): void {
    res.writeHead(status, { ...SECURITY_HEADERS, ...headers, 'content-type': type, 'content-length': Buffer.byteLength(body) });
    res.end(res.req.method === 'HEAD' ? undefined : body);
  }

  /** The Host header names this server (loopback, our port): a rebound DNS name does not. */
  private sameHost(req: IncomingMessage): boolean {
    const port = (this.http.address() as AddressInfo).port;
    return [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`].includes(req.headers.host ?? '');
  }

  /** Browsers always send Origin on websockets: only the page's own may connect. */
  private sameOrigin(req: IncomingMessage): boolean {
    const origin = req.headers.origin;
    return origin === undefined || origin === `http://${req.headers.host ?? ''}`;
  }

  private welcome(socket: WebSocket): void {
    const client: Client = { socket, pending: new Map(), resync: false, resyncs: 0, following: null };
    this.clients.add(client);
    socket.on('close', () => this.forget(client));
    socket.on('error', () => this.forget(client));
    // A page may ask to follow one allocation's timeline; anything else it sends is ignored.
    socket.on('message', (data) => {
      const request = followRequest(data);
      if (request === undefined) return;
      client.following = request.allocationId;
      if (request.allocationId !== null) this.enqueue(client, 'timeline', this.timelineText(request.allocationId));
    });
    this.write(client, this.model.serialize(this.model.snapshot()));
    this.startTicking();
  }

  private forget(client: Client): void {
    this.clients.delete(client);
    if (this.clients.size === 0) this.stopTicking();
  }

  /** The clock's timer runs only while someone watches, so an idle inspector leaves a virtual clock idle. */
  private startTicking(): void {
    if (this.tickMs <= 0 || this.ticker !== undefined) return;
    const clock = this.model.clock;
    const tick = (): void => {
      this.ticker = clock.setTimeout(tick, this.tickMs);
      this.model.tick();
    };
    this.ticker = clock.setTimeout(tick, this.tickMs);
  }

  private stopTicking(): void {
    if (this.ticker !== undefined) this.model.clock.clearTimeout(this.ticker);
    this.ticker = undefined;
  }

  private enqueue(client: Client, key: string, text: string): void {
    if (!client.resync) {
      client.pending.delete(key);
      client.pending.set(key, text);
      if (client.pending.size > this.maxPending) {
        client.pending.clear();
        client.resync = true;
      }
    }
    this.flush(client);
  }

  /** Sends what waits while the socket has room; called again as each send completes. */
  private flush(client: Client): void {
    while (client.socket.readyState === client.socket.OPEN && client.socket.bufferedAmount < this.highWater) {
      if (client.resync) {
        client.resync = false;
        client.resyncs += 1;
        this.write(client, this.model.serialize(this.model.snapshot(true)));
        // The timeline it follows went with the dropped deltas.
        if (client.following !== null) client.pending.set('timeline', this.timelineText(client.following));
        continue;
      }
      const next = client.pending.entries().next();
      if (next.done) return;
      client.pending.delete(next.value[0]);
      this.write(client, next.value[1]);
    }
  }

  private write(client: Client, text: string): void {
    client.socket.send(text, (error) => {
      if (error) this.forget(client);
      else if (client.pending.size > 0 || client.resync) this.flush(client);
    });
  }
}
