/**
 * FakeConsul: a real HTTP server on 127.0.0.1 that answers Consul's health-state endpoint
 * (GET /v1/health/state/<any|passing|warning|critical>) as a Consul agent does, with blocking
 * queries (X-Consul-Index, index + wait on the injected clock, wait/16 seeded jitter), the ACL token
 * check, and services and checks the test registers the way Nomad names them.
 *
 *   const consul = await FakeConsul.start({ clock });
 *   const { checkIds } = consul.registerService({ allocId, task: 'web', service: 'web', checks: [{ name: 'alive' }] });
 *   consul.setStatus(checkIds[0], 'passing');
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { systemClock, type Clock } from '../clock/index.js';
import { waitForIndex, type BlockingContext } from './nomad/blocking.js';
import { parseGoDuration } from './nomad/goText.js';
import { SeededRandom } from './nomad/ids.js';
import { sendJson, sendText } from './nomad/wire.js';
import { errorMessage } from '../errorMessage.js';

export type FakeCheckStatus = 'passing' | 'warning' | 'critical';

export interface FakeConsulOptions {
  clock?: Clock;
  /** When set, ACLs are on (default deny): a request without a token sees no checks, a wrong one gets 403. */
  token?: string;
  /** Node the services run on (default "node-1"). */
  node?: string;
  /** Seed of the blocking-query jitter (default 1). */
  seed?: number;
}

export interface FakeCheckInput {
  readonly name: string;
  /** Default critical, as Consul registers a check before its first run. */
  readonly status?: FakeCheckStatus;
  /** Consul check type (default "http"). */
  readonly type?: string;
}

/** A service as Nomad registers it for an allocation: a task's (`task`) or the group's (`group`). */
export interface FakeServiceInput {
  readonly allocId: string;
  readonly task?: string;
  readonly group?: string;
  readonly service: string;
  /** Default "http". */
  readonly portLabel?: string;
  readonly checks: readonly FakeCheckInput[];
  /** Also register its Connect sidecar (`<id>-sidecar-proxy`) with these checks. */
  readonly sidecarChecks?: readonly FakeCheckInput[];
}

export interface FakeServiceRegistration {
  readonly serviceId: string;
  readonly checkIds: readonly string[];
  /** Present when a sidecar was registered. */
  readonly sidecarCheckIds?: readonly string[];
}

/** consul api/health.go HealthCheck, as an OSS agent encodes it. */
interface HealthCheckRecord {
  Node: string;
  CheckID: string;
  Name: string;
  Status: FakeCheckStatus;
  Notes: string;
  Output: string;
  ServiceID: string;
  ServiceName: string;
  ServiceTags: string[];
  Type: string;
  Interval: string;
  Timeout: string;
  ExposedPort: number;
  Definition: Record<string, never>;
  CreateIndex: number;
  ModifyIndex: number;
}

const STATES: ReadonlySet<string> = new Set(['any', 'passing', 'warning', 'critical']);
/** Consul's default and maximum wait of a blocking query. */
const DEFAULT_WAIT_MS = 300_000;
const MAX_WAIT_MS = 600_000;

class ConsulApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(body);
  }
}

export class FakeConsul {
  /** Raft index of the checks table: X-Consul-Index. */
  index = 1;
  /** Health queries answered, and how many were waiting at once at most. */
  readonly stats = { requests: 0, inFlight: 0, maxInFlight: 0 };
  private readonly records = new Map<string, HealthCheckRecord>();
  private readonly listeners = new Set<() => void>();
  private readonly sockets = new Set<Socket>();
  private readonly blocking: BlockingContext;
  private readonly node: string;
  private sequence = 0;

  private constructor(
    readonly server: Server,
    readonly clock: Clock,
    private readonly options: FakeConsulOptions,
  ) {
    this.node = options.node ?? 'node-1';
    this.blocking = {
      clock,
      random: new SeededRandom(options.seed ?? 1),
      onChange: (listener) => {
        this.listeners.add(listener);
        return () => this.listeners.delete(listener);
      },
    };
  }

  static async start(options: FakeConsulOptions = {}): Promise<FakeConsul> {
    const server = createServer((req, res) => fake.handle(req, res));
    const fake: FakeConsul = new FakeConsul(server, options.clock ?? systemClock, options);
    server.keepAliveTimeout = 0;
    server.on('connection', (socket: Socket) => {
      fake.sockets.add(socket);
      socket.on('close', () => fake.sockets.delete(socket));
    });
    server.on('clientError', (_error, socket) => socket.destroy());
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return fake;
  }

  /** 'http://127.0.0.1:<port>' */
  get address(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Registers a service and its checks under the IDs Nomad gives them; one index step. */
  registerService(input: FakeServiceInput): FakeServiceRegistration {
    if ((input.task === undefined) === (input.group === undefined)) throw new Error('FakeConsul.registerService: give exactly one of task and group');
    const workload = input.task ?? `group-${input.group as string}`;
    const serviceId = `_nomad-task-${input.allocId}-${workload}-${input.service}-${input.portLabel ?? 'http'}`;
    const index = this.index + 1;
    const checkIds = input.checks.map((check) => this.addCheck(this.nomadCheckId(serviceId, check.name), serviceId, input.service, check, index));
    const sidecarId = `${serviceId}-sidecar-proxy`;
    const sidecarCheckIds = input.sidecarChecks?.map((check, i) =>
      this.addCheck(`service:${sidecarId}:${i + 1}`, sidecarId, `${input.service}-sidecar-proxy`, check, index),
    );
    this.changed(index);
    return { serviceId, checkIds, ...(sidecarCheckIds === undefined ? {} : { sidecarCheckIds }) };
  }

  /** Sets one check's status (and output); a change moves the index. */
  setStatus(checkId: string, status: FakeCheckStatus, output = ''): void {
    const record = this.records.get(checkId);
    if (record === undefined) throw new Error(`FakeConsul: no check ${checkId}`);
    if (record.Status === status && record.Output === output) return;
    const index = this.index + 1;
    Object.assign(record, { Status: status, Output: output, ModifyIndex: index });
    this.changed(index);
  }

  /** Sets every check of a service (its sidecar's too). */
  setServiceStatus(serviceId: string, status: FakeCheckStatus): void {
    for (const record of [...this.records.values()]) {
      if (record.ServiceID === serviceId || record.ServiceID === `${serviceId}-sidecar-proxy`) this.setStatus(record.CheckID, status, record.Output);
    }
  }

  /** Removes a service with its checks (and sidecar). */
  deregisterService(serviceId: string): void {
    const before = this.records.size;
    for (const [id, record] of this.records) {
      if (record.ServiceID === serviceId || record.ServiceID === `${serviceId}-sidecar-proxy`) this.records.delete(id);
    }
    if (this.records.size !== before) this.changed(this.index + 1);
  }

  /** A snapshot restored from an older state (or another cluster): the index goes back to `index`. */
  restore(index: number): void {
    this.changed(index);
  }

  /** Every check, as /v1/health/state/any would list it. */
  checks(): HealthCheckRecord[] {
    return [...this.records.values()].map((record) => ({ ...record }));
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const listener of [...this.listeners]) listener();
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  /** Nomad's check IDs are a hash of the service ID and the check definition. */
  private nomadCheckId(serviceId: string, name: string): string {
    this.sequence += 1;
    return `_nomad-check-${createHash('sha1').update(`${serviceId}\0${name}\0${this.sequence}`).digest('hex')}`;
  }

  private addCheck(checkId: string, serviceId: string, serviceName: string, check: FakeCheckInput, index: number): string {
    this.records.set(checkId, {
      Node: this.node,
      CheckID: checkId,
      Name: check.name,
      Status: check.status ?? 'critical',
      Notes: '',
      Output: '',
      ServiceID: serviceId,
      ServiceName: serviceName,
      ServiceTags: [],
      Type: check.type ?? 'http',
      Interval: '10s',
      Timeout: '2s',
      ExposedPort: 0,
      Definition: {},
      CreateIndex: index,
      ModifyIndex: index,
    });
    return checkId;
  }

  private changed(index: number): void {
    this.index = index;
    for (const listener of [...this.listeners]) listener();
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    this.route(req, res).catch((error: unknown) => {
      if (res.headersSent || res.destroyed) return;
      const apiError = error instanceof ConsulApiError ? error : new ConsulApiError(500, errorMessage(error));
      sendText(req, res, apiError.status, apiError.body);
    });
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const match = /^\/v1\/health\/state\/([^/]+)$/.exec(url.pathname);
    if (match === null) throw new ConsulApiError(404, '');
    if (req.method !== 'GET') throw new ConsulApiError(405, `method ${req.method ?? ''} not allowed`);
    const state = decodeURIComponent(match[1] as string);
    if (!STATES.has(state)) throw new ConsulApiError(400, `Invalid state: ${state}`);
    const allowed = this.authorized(req, url);
    const blocking = parseBlocking(url.searchParams);
    this.stats.requests += 1;
    this.stats.inFlight += 1;
    this.stats.maxInFlight = Math.max(this.stats.maxInFlight, this.stats.inFlight);
    try {
      await waitForIndex(this.blocking, blocking, () => this.index, (abort) => res.on('close', abort));
    } finally {
      this.stats.inFlight -= 1;
    }
    if (res.destroyed) return;
    const checks = allowed ? this.checks().filter((check) => state === 'any' || check.Status === state) : [];
    res.setHeader('X-Consul-Index', String(Math.max(1, this.index)));
    res.setHeader('X-Consul-Knownleader', 'true');
    res.setHeader('X-Consul-Lastcontact', '0');
    res.setHeader('X-Consul-Effective-Consistency', 'leader');
    if (!allowed) res.setHeader('X-Consul-Results-Filtered-By-Acls', 'true');
    sendJson(req, res, checks);
  }

  /**
   * Consul's ACLs with default deny: X-Consul-Token, `Authorization: Bearer` or ?token=. No token is
   * the anonymous token, whose list answers are filtered to nothing; an unknown one is refused.
   */
  private authorized(req: IncomingMessage, url: URL): boolean {
    if (this.options.token === undefined) return true;
    const bearer = /^Bearer\s+(\S+)/i.exec(String(req.headers.authorization ?? ''))?.[1];
    const token = String(req.headers['x-consul-token'] ?? '') || bearer || url.searchParams.get('token') || '';
    if (token === '') return false;
    if (token !== this.options.token) throw new ConsulApiError(403, 'ACL not found');
    return true;
  }
}

/** Consul's index and wait parameters (agent/http.go parseWait): wait defaults to 5 min, at most 10. */
function parseBlocking(query: URLSearchParams): { index: number; waitMs: number } {
  const indexText = query.get('index') ?? '';
  const waitText = query.get('wait') ?? '';
  if (indexText !== '' && !/^\d+$/.test(indexText)) throw new ConsulApiError(400, 'Invalid index');
  const waitNs = waitText === '' ? DEFAULT_WAIT_MS * 1e6 : parseGoDuration(waitText);
  if (waitNs === undefined || waitNs < 0) throw new ConsulApiError(400, 'Invalid wait time');
  return { index: indexText === '' ? 0 : Number(indexText), waitMs: Math.min(MAX_WAIT_MS, waitNs / 1e6) };
}
