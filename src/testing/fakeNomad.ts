/**
 * FakeNomad: a real HTTP(S) server on 127.0.0.1 that speaks Nomad 1.1.2's API over an in-memory
 * cluster the test scripts, with the event stream, blocking queries, ACL token check, TLS/mTLS and
 * fault switches. All of its timers run on the injected clock.
 *
 *   const fake = await FakeNomad.start({ clock });
 *   fake.cluster.registerJob(spec); fake.cluster.placeAllocations('web');
 *   ... point the client at fake.address ...
 *   await fake.close();
 */
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock, type Clock } from '../clock/index.js';
import type { Allocation } from '../nomad/types.js';
import { attachFakeExec, type FakeExec } from './fakeExec/attachFakeExec.js';
import { clusterExecTargets } from './fakeExec/clusterLookup.js';
import type { RecordedLine } from './recording.js';
import type { BlockingContext } from './nomad/blocking.js';
import { ActingCluster, type ActingClusterOptions } from './nomad/actingCluster.js';
import { ClusterState } from './nomad/clusterState.js';
import { NomadApiError } from './nomad/errors.js';
import { EventBroker } from './nomad/eventBroker.js';
import { EventStreamSession, parseStreamRequest, refuseAfterHead } from './nomad/eventStream.js';
import { FaultSwitches } from './nomad/faults.js';
import { SeededRandom } from './nomad/ids.js';
import { replayNow, replayOnClock, type ReplayHandle, type ReplayOptions } from './nomad/replay.js';
import { matchRoute } from './nomad/routes.js';
import { requestToken, sendJson, sendText } from './nomad/wire.js';
import { fakeNomadFeatures, type FakeNomadFeatures, type FakeNomadVersion } from './nomad/versionFeatures.js';
import { ClientDisconnects } from './nomad/disconnects.js';
import { FakeNomadChecks } from './nomad/checks.js';
import { ServerActivity } from './quiet.js';
import { errorMessage } from '../errorMessage.js';

export interface FakeNomadTlsOptions {
  /** PEM server certificate and key. */
  cert: string | Buffer;
  key: string | Buffer;
  /** PEM CA that client certificates must chain to. */
  ca?: string | Buffer;
  /** Require a client certificate signed by `ca` (mTLS). */
  requestClientCert?: boolean;
}

export type { FakeNomadFeatures, FakeNomadVersion };

export interface FakeNomadOptions {
  /**
   * The Nomad release to play where releases differ (nomad-protocol §10, nomad/versionFeatures.ts),
   * any of 1.1.0 … 2.0.x: `1.1.2` (default) is the recorded agent; `2.0` plays 2.0.5. It is the
   * version /v1/agent/self reports, and from it: `namespace=*` on the stream (1.2+); ClientStatus
   * `unknown` and `Reconnected` events for disconnected clients (1.3+, `fake.clients`); `Authorization:
   * Bearer` (1.4+); Nomad's service checks at /v1/allocation/:id/checks (1.4+); an exec session's end a
   * TCP close with no close frame (1.5.15/1.6.8/1.7.5/1.8+); a refused stream a 403 (1.10+), then
   * (1.11.2+) the stream close-delimited and never compressed and a refused one a 200 closed before its
   * first byte; system jobs with the default update strategy and deployments (1.11+); a purge
   * published as JobDeregistered with `Deleted: true` (2.0+); exec token and command errors as close
   * frames after the upgrade (2.0.3+).
   */
  version?: FakeNomadVersion;
  /** ACL capabilities the token lacks (requests that need them are refused "Permission denied"), ACLs on or not. */
  deny?: readonly ('agent:read' | 'node:read')[];
  clock?: Clock;
  tls?: FakeNomadTlsOptions;
  /** When set, ACLs are on: requests need this X-Nomad-Token (403 otherwise). */
  token?: string;
  /** Seed of every random choice (IDs, blocking-query jitter). Default 1. */
  seed?: number;
  /** Event buffer size in batches (Nomad's event_buffer_size, default 100). */
  eventBufferSize?: number;
  /** Raft index the cluster starts at (default 1). */
  initialIndex?: number;
  /** Nomad ≥ 1.2 behaviour: `namespace=*` on the event stream matches every namespace. 1.1.2 (default) matches none. */
  namespaceWildcard?: boolean;
  /**
   * The exec websocket (/v1/client/allocation/:id/exec), on by default: commands run as real local
   * processes, each allocation in its own directory under `root` (a fresh temporary directory,
   * removed on close, unless given). `false` leaves upgrades to the test.
   */
  exec?: false | { root?: string; env?: Readonly<Record<string, string>> };
  /**
   * Act as a cluster (off by default: tests script every step): evaluations are scheduled,
   * allocations placed, started and stopped on the clock, with injectable placement and allocation
   * failures (see nomad/actingCluster.ts). Allocation directories go under the exec root.
   */
  acting?: boolean | ActingClusterOptions;
  /** The drivers its node reports healthy on GET /v1/nodes (default exec and raw_exec, as a dev agent with raw_exec enabled). */
  drivers?: readonly string[];
}

/** The ACL capability a path needs, of those FakeNomad can be told the token lacks. */
function capabilityOf(path: string): 'agent:read' | 'node:read' | undefined {
  if (path === '/v1/agent/self') return 'agent:read';
  if (path === '/v1/agent/members' || path === '/v1/nodes' || path.startsWith('/v1/node/')) return 'node:read';
  return undefined;
}

/** GET /v1/allocation/:id/checks and the client path the Go API uses (Nomad 1.4+). */
const NOMAD_CHECKS_PATH = /^\/v1\/(?:client\/)?allocation\/([^/]+)\/checks$/;

export class FakeNomad {
  readonly cluster: ClusterState;
  /** Nomad's own service check results (provider = "nomad"), served from version 1.4. */
  readonly checks: FakeNomadChecks;
  /** What the release played serves differently. */
  readonly features: FakeNomadFeatures;
  /** Clients that stop heartbeating and come back (ClientStatus unknown, Nomad 1.3+). */
  readonly clients: ClientDisconnects;
  readonly faults = new FaultSwitches();
  readonly broker: EventBroker;
  /**
   * Requests received, bytes written, commands running: with a client's WireTally, tells when both
   * sides are quiet (quiet.ts).
   */
  readonly activity = new ServerActivity(() => (this.exec?.running.size ?? 0) > 0);
  private readonly sockets = new Set<Socket>();
  private readonly streams = new Set<EventStreamSession>();
  private readonly replays = new Set<ReplayHandle>();
  private readonly blocking: BlockingContext;
  private readonly random: SeededRandom;
  /** The exec endpoint, unless started with `exec: false`. */
  exec: FakeExec | undefined;
  /** The scheduler and client that act by themselves, when started with `acting`. */
  acting: ActingCluster | undefined;
  private execRoot: string | undefined;
  /** Where each allocation's directory is (the exec root). */
  private allocRoot: string | undefined;

  private constructor(
    readonly server: HttpServer | HttpsServer,
    readonly clock: Clock,
    private readonly options: FakeNomadOptions,
  ) {
    const random = new SeededRandom(options.seed ?? 1);
    this.random = random;
    this.broker = new EventBroker(options.eventBufferSize ?? 100);
    this.features = fakeNomadFeatures(options.version);
    this.cluster = new ClusterState(clock, this.broker, random, options.initialIndex ?? 1);
    this.cluster.features = this.features;
    if (options.drivers !== undefined) this.cluster.nodeDrivers = [...options.drivers];
    this.checks = new FakeNomadChecks(this.cluster, clock);
    this.clients = new ClientDisconnects(this.cluster, clock, this.features);
    this.blocking = { clock, random, onChange: (listener) => this.cluster.onChange(listener) };
  }

  static async start(options: FakeNomadOptions = {}): Promise<FakeNomad> {
    const handler = (req: IncomingMessage, res: ServerResponse): void => fake.handle(req, res);
    const server = options.tls
      ? createHttpsServer(
          {
            cert: options.tls.cert, key: options.tls.key,
            ...(options.tls.ca === undefined ? {} : { ca: options.tls.ca }),
            requestCert: options.tls.requestClientCert === true,
            rejectUnauthorized: options.tls.requestClientCert === true,
          },
          handler,
        )
      : createHttpServer(handler);
    const fake: FakeNomad = new FakeNomad(server, options.clock ?? systemClock, options);
    server.keepAliveTimeout = 0;
    // The raw TCP socket, also under TLS: a refusal drops it before the handshake, and close()
    // destroys sockets whose handshake never finished.
    server.on('connection', (socket: Socket) => fake.accept(socket));
    server.on('clientError', (_error, socket) => socket.destroy());
    fake.attachExec();
    fake.startActing();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return fake;
  }

  /**
   * The kernel kills an allocation's task for its memory, as Nomad reports it: the commands exec'd in
   * it are killed, the task's Terminated event says `oom_killed: "true"` (exit code 137, "OOM
   * Killed"), and the task restarts after its restart policy's delay (acting: started again then) or,
   * with no attempt left, fails the allocation. Default task: the allocation's first.
   */
  oomKill(allocId: string, options: { task?: string } = {}): Allocation {
    const alloc = this.cluster.allocation(allocId);
    const task = options.task ?? alloc?.Job?.TaskGroups?.find((group) => group.Name === alloc.TaskGroup)?.Tasks[0]?.Name;
    if (alloc === undefined || task === undefined) throw new Error(`no allocation ${allocId} with a task to kill`);
    this.exec?.killAllocation(allocId);
    const { allocation, restartDelayMs } = this.cluster.oomKillTask(allocId, task);
    if (restartDelayMs !== undefined) this.acting?.restartTask(allocId, task, restartDelayMs);
    return allocation;
  }

  /** Client connections open now (requests, event streams, exec websockets), for a test to see what a client left open. */
  get openConnections(): number {
    return this.sockets.size;
  }

  /** 'http://127.0.0.1:<port>' or 'https://127.0.0.1:<port>'. */
  get address(): string {
    const { port } = this.server.address() as AddressInfo;
    return `${this.options.tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  }

  /**
   * Replays a recorded stream: on the clock (each line at its `t`; a bad line rejects `done`), or at
   * once with `{ immediate: true }` (a bad line throws ReplayLineError).
   */
  replay(lines: readonly RecordedLine[], options: ReplayOptions & { immediate?: boolean } = {}): ReplayHandle {
    if (options.immediate) {
      replayNow(this.cluster, lines, options);
      return { done: Promise.resolve(), stop: () => undefined };
    }
    const handle = replayOnClock(this.cluster, this.clock, lines, options);
    this.replays.add(handle);
    void handle.done.finally(() => this.replays.delete(handle)).catch(() => undefined);
    return handle;
  }

  /** Ends every event stream (as a server shutdown does); clients see the chunked body end. */
  endStreams(): void {
    for (const stream of [...this.streams]) stream.end();
  }

  /**
   * A server restart (or a leader change): every connection is dropped and the event buffer starts
   * empty, so a client resuming from its last index is replayed nothing it missed; the cluster's
   * state (what the API serves) is kept, as Nomad keeps it in raft.
   */
  restart(): void {
    this.broker.forget();
    for (const stream of [...this.streams]) stream.destroy();
    for (const socket of this.sockets) socket.destroy();
  }

  /** Closes every socket, ends streams, stops replays, kills exec'd commands and clears the fake's timers. */
  async close(): Promise<void> {
    this.acting?.stop();
    this.clients.stop();
    for (const replay of [...this.replays]) replay.stop();
    await this.exec?.close();
    if (this.execRoot !== undefined) rmSync(this.execRoot, { recursive: true, force: true });
    for (const stream of [...this.streams]) stream.destroy();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  private startActing(): void {
    const options = this.options.acting;
    if (options === undefined || options === false) return;
    this.acting = new ActingCluster(this.cluster, this.broker, this.clock, this.random, {
      ...(this.allocRoot === undefined ? {} : { allocRoot: this.allocRoot }),
      ...(options === true ? {} : options),
    });
  }

  private attachExec(): void {
    const options = this.options.exec;
    if (options === false) return;
    const root = options?.root ?? (this.execRoot = mkdtempSync(join(tmpdir(), 'fakenomad-alloc-')));
    // As Nomad's data dir: other users (an execution's unprivileged one) may pass through to their allocation.
    if (options?.root === undefined) chmodSync(root, 0o755);
    this.allocRoot = root;
    this.exec = attachFakeExec(this.server as HttpServer, {
      clock: this.clock,
      lookup: clusterExecTargets(this.cluster, root),
      ...(options?.env === undefined ? {} : { env: options.env }),
      ...(this.options.token === undefined ? {} : { token: this.options.token }),
      features: this.features,
    });
  }

  private accept(socket: Socket): void {
    // A connection handed back after an exec refusal (attachFakeExec) is one already accepted.
    if (this.sockets.has(socket)) return;
    if (this.faults.takeRefusal()) {
      socket.destroy();
      return;
    }
    this.activity.watch(socket);
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    this.activity.requests++;
    this.route(req, res).catch((error: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const apiError = error instanceof NomadApiError ? error : new NomadApiError(500, errorMessage(error));
      sendText(req, res, apiError.status, apiError.body);
    });
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const method = req.method ?? 'GET';
    const failure = this.faults.takeFailure(url.pathname);
    if (failure) {
      for (const [name, value] of Object.entries(failure.headers)) res.setHeader(name, value);
      throw new NomadApiError(failure.status, failure.body);
    }
    const hijacked = this.features.hijackedEventStream;
    // From 1.11.2 Nomad checks the token after taking over the stream's connection: see below.
    if (!(hijacked && url.pathname === '/v1/event/stream')) this.checkToken(req, url.pathname);
    if (url.pathname === '/v1/event/stream') {
      if (method !== 'GET') throw new NomadApiError(405, 'Invalid method');
      const request = parseStreamRequest(url.searchParams, this.options.namespaceWildcard ?? this.features.namespaceWildcard);
      if (hijacked && this.tokenRefusal(req, url.pathname) !== undefined) {
        refuseAfterHead(res);
        return;
      }
      const session = new EventStreamSession(req, res, request, this.broker, this.clock, this.faults.takeStreamPlan(), (s) => this.streams.delete(s), hijacked);
      this.streams.add(session);
      session.start();
      return;
    }
    const checks = this.features.nomadServiceChecks ? NOMAD_CHECKS_PATH.exec(url.pathname) : null;
    if (checks !== null && method === 'GET') {
      const allocId = decodeURIComponent(checks[1]!);
      const results = this.checks.results(allocId);
      if (results === undefined) throw new NomadApiError(404, `Unknown allocation ${JSON.stringify(allocId)}`);
      sendJson(req, res, results);
      return;
    }
    const route = matchRoute(method, url.pathname);
    if ('status' in route) throw new NomadApiError(route.status, route.text);
    await route.handler({ req, res, url, params: route.params, cluster: this.cluster, blocking: this.blocking, faults: this.faults });
  }

  /** ACL check as Nomad 1.1.2 answers it: an unknown token is "ACL token not found", none at all lacks permission. */
  private checkToken(req: IncomingMessage, path: string): void {
    const refusal = this.tokenRefusal(req, path);
    if (refusal !== undefined) throw refusal;
  }

  private tokenRefusal(req: IncomingMessage, path: string): NomadApiError | undefined {
    if (path === '/v1/status/leader') return undefined;
    const lacking = this.options.deny?.find((capability) => capabilityOf(path) === capability);
    if (this.options.token === undefined) return lacking === undefined ? undefined : new NomadApiError(403, 'Permission denied');
    const token = requestToken(req, this.features.bearerToken);
    if (token === this.options.token) return lacking === undefined ? undefined : new NomadApiError(403, 'Permission denied');
    const streamStatus = path === '/v1/event/stream' && !this.features.eventStreamForbidden ? 500 : 403;
    if (token === undefined || token === '') return new NomadApiError(streamStatus, 'Permission denied');
    return new NomadApiError(403, 'ACL token not found');
  }
}

