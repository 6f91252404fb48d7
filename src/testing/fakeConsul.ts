/**
 * FakeConsul: a real HTTP server on 127.0.0.1 that answers as a Consul 1.8.7 agent does (held to
 * the real agent by test/conformance/consul.test.ts): the catalogue's health states
 * (GET /v1/health/state/<state>, blocking queries with X-Consul-Index, index + wait on the injected
 * clock, wait/16 seeded jitter), the agent's own checks (GET /v1/agent/checks), service registration
 * and TTL updates through the agent API (what Nomad's client and its script checks do), and the ACL
 * token check, with services and checks the test registers the way Nomad names them.
 *
 *   const consul = await FakeConsul.start({ clock });
 *   const { checkIds } = consul.registerService({ allocId, task: 'web', service: 'web', checks: [{ name: 'alive' }] });
 *   consul.setStatus(checkIds[0], 'passing');
 *
 * As on a Consul agent, a change of a check's output alone reaches the catalogue only after
 * check_update_interval (5 min by default); the agent's own view has it at once. Not modelled: HTTP,
 * TCP or script checks are never run (their status is what the test sets), TTLs never expire.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { systemClock, type Clock, type TimerHandle } from '../clock/index.js';
import { waitForIndex, type BlockingContext } from './nomad/blocking.js';
import { parseGoDuration } from './nomad/goText.js';
import { SeededRandom } from './nomad/ids.js';
import { readBody, sendJson, sendText } from './nomad/wire.js';
import { errorMessage } from '../errorMessage.js';

export type FakeCheckStatus = 'passing' | 'warning' | 'critical';

export interface FakeConsulOptions {
  clock?: Clock;
  /** When set, ACLs are on (default deny): a request without a token sees no checks and may not write, a wrong one gets 403. */
  token?: string;
  /** Node the services run on (default "node-1"). */
  node?: string;
  /** Seed of the blocking-query jitter (default 1). */
  seed?: number;
  /** Consul's check_update_interval: how long an output-only change waits to reach the catalogue (default 5 min). */
  checkUpdateIntervalMs?: number;
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

/** consul api/health.go HealthCheck, as a Consul 1.8 OSS agent encodes it (and in this order). */
export interface FakeHealthCheck {
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
  Definition: Record<string, never>;
  CreateIndex: number;
  ModifyIndex: number;
}

/** A check as the agent holds it: the catalogue's record, and the output the agent has not synced yet. */
interface CheckRecord {
  readonly catalog: FakeHealthCheck;
  /** The agent's current output (ahead of the catalogue's during check_update_interval). */
  agentOutput: string;
  /** The deferred sync of an output-only change, while one waits. */
  deferred: TimerHandle | undefined;
}

const STATUSES: ReadonlySet<string> = new Set<FakeCheckStatus>(['passing', 'warning', 'critical']);
/** Consul's default and maximum wait of a blocking query. */
const DEFAULT_WAIT_MS = 300_000;
const MAX_WAIT_MS = 600_000;
const DEFAULT_CHECK_UPDATE_INTERVAL_MS = 300_000;
/** /v1/agent/check/<verb>/<id>: the TTL updates and the status each sets. */
const TTL_VERBS: Readonly<Record<string, FakeCheckStatus>> = { pass: 'passing', warn: 'warning', fail: 'critical' };

class ConsulApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(body);
  }
}

/** Consul's 405: the methods the route takes, and the one it did not. */
function methodNotAllowed(method: string | undefined, allowed: string): ConsulApiError {
  return new ConsulApiError(405, `method ${method ?? ''} not allowed`, { Allow: `OPTIONS,${allowed}` });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export class FakeConsul {
  /** Raft index of the checks table: X-Consul-Index. */
  index = 1;
  /** Health queries answered, and how many were waiting at once at most. */
  readonly stats = { requests: 0, inFlight: 0, maxInFlight: 0 };
  private readonly records = new Map<string, CheckRecord>();
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

  /**
   * Sets one check's status and output, as its agent does. A new status reaches the catalogue at
   * once (an index step); the same status with new output only after check_update_interval.
   */
  setStatus(checkId: string, status: FakeCheckStatus, output = ''): void {
    const record = this.records.get(checkId);
    if (record === undefined) throw new Error(`FakeConsul: no check ${checkId}`);
    record.agentOutput = output;
    const { catalog } = record;
    if (catalog.Status !== status) {
      this.sync(record, status);
      return;
    }
    if (catalog.Output === output || record.deferred !== undefined) return;
    record.deferred = this.clock.setTimeout(() => {
      record.deferred = undefined;
      if (this.records.get(checkId) === record && record.catalog.Output !== record.agentOutput) this.sync(record, record.catalog.Status);
    }, this.options.checkUpdateIntervalMs ?? DEFAULT_CHECK_UPDATE_INTERVAL_MS);
  }

  /** Sets every check of a service (its sidecar's too). */
  setServiceStatus(serviceId: string, status: FakeCheckStatus): void {
    for (const record of [...this.records.values()]) {
      const { ServiceID, CheckID } = record.catalog;
      if (ServiceID === serviceId || ServiceID === `${serviceId}-sidecar-proxy`) this.setStatus(CheckID, status, record.agentOutput);
    }
  }

  /** Removes a service with its checks (and sidecar). */
  deregisterService(serviceId: string): void {
    if (this.removeService(serviceId) || this.removeService(`${serviceId}-sidecar-proxy`)) this.changed(this.index + 1);
  }

  /** A snapshot restored from an older state (or another cluster): the index goes back to `index`. */
  restore(index: number): void {
    this.changed(index);
  }

  /** Every check, as /v1/health/state/any would list it. */
  checks(): FakeHealthCheck[] {
    return [...this.records.values()].map((record) => ({ ...record.catalog }));
  }

  async close(): Promise<void> {
    for (const record of this.records.values()) if (record.deferred !== undefined) this.clock.clearTimeout(record.deferred);
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

  private addCheck(checkId: string, serviceId: string, serviceName: string, check: FakeCheckInput & { notes?: string }, index: number): string {
    const previous = this.records.get(checkId);
    if (previous?.deferred !== undefined) this.clock.clearTimeout(previous.deferred);
    this.records.set(checkId, {
      catalog: {
        Node: this.node,
        CheckID: checkId,
        Name: check.name,
        Status: check.status ?? 'critical',
        Notes: check.notes ?? '',
        Output: '',
        ServiceID: serviceId,
        ServiceName: serviceName,
        ServiceTags: [],
        Type: check.type ?? 'http',
        Definition: {},
        CreateIndex: index,
        ModifyIndex: index,
      },
      agentOutput: '',
      deferred: undefined,
    });
    return checkId;
  }

  private removeService(serviceId: string): boolean {
    let removed = false;
    for (const [id, record] of this.records) {
      if (record.catalog.ServiceID !== serviceId) continue;
      if (record.deferred !== undefined) this.clock.clearTimeout(record.deferred);
      this.records.delete(id);
      removed = true;
    }
    return removed;
  }

  /** The agent's state of a check reaches the catalogue: one index step. */
  private sync(record: CheckRecord, status: FakeCheckStatus): void {
    const index = this.index + 1;
    Object.assign(record.catalog, { Status: status, Output: record.agentOutput, ModifyIndex: index });
    this.changed(index);
  }

  private changed(index: number): void {
    this.index = index;
    for (const listener of [...this.listeners]) listener();
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    this.route(req, res).catch((error: unknown) => {
      if (res.headersSent || res.destroyed) return;
      const apiError = error instanceof ConsulApiError ? error : new ConsulApiError(500, errorMessage(error));
      for (const [name, value] of Object.entries(apiError.headers)) res.setHeader(name, value);
      sendText(req, res, apiError.status, apiError.body);
    });
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const path = url.pathname;
    const state = /^\/v1\/health\/state\/([^/]*)$/.exec(path);
    if (state !== null) return this.healthState(req, res, url, decodeURIComponent(state[1] as string));
    if (path === '/v1/agent/checks') {
      if (req.method !== 'GET') throw methodNotAllowed(req.method, 'GET');
      const allowed = this.authorized(req, url);
      const checks = allowed ? [...this.records.values()].map((record) => ({ ...record.catalog, Output: record.agentOutput, CreateIndex: 0, ModifyIndex: 0 })) : [];
      return sendJson(req, res, Object.fromEntries(checks.map((check) => [check.CheckID, check])));
    }
    const agentWrite = /^\/v1\/agent\/(service\/register|service\/deregister\/(.+)|check\/(pass|warn|fail|update)\/(.+))$/.exec(path);
    if (agentWrite === null) throw new ConsulApiError(404, '');
    if (req.method !== 'PUT') throw methodNotAllowed(req.method, 'PUT');
    this.writer(req, url);
    const [, , deregistered, verb, checkId] = agentWrite;
    if (deregistered !== undefined) this.deregisterService(decodeURIComponent(deregistered));
    else if (verb === undefined) this.registerFromAgent(await this.decode(req));
    else if (verb === 'update') this.updateFromAgent(decodeURIComponent(checkId as string), await this.decode(req));
    else this.ttlUpdate(decodeURIComponent(checkId as string), TTL_VERBS[verb] as FakeCheckStatus, url.searchParams.get('note') ?? '');
    sendText(req, res, 200, '');
  }

  private async healthState(req: IncomingMessage, res: ServerResponse, url: URL, state: string): Promise<void> {
    if (req.method !== 'GET') throw methodNotAllowed(req.method, 'GET');
    if (state === '') throw new ConsulApiError(400, 'Missing check state');
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
    // Consul does not check the state's name: one it does not know simply matches no check.
    const checks = allowed ? this.checks().filter((check) => state === 'any' || check.Status === state) : [];
    res.setHeader('X-Consul-Index', String(Math.max(1, this.index)));
    res.setHeader('X-Consul-Knownleader', 'true');
    res.setHeader('X-Consul-Lastcontact', '0');
    res.setHeader('X-Consul-Effective-Consistency', 'leader');
    sendJson(req, res, checks);
  }

  private async decode(req: IncomingMessage): Promise<Record<string, unknown>> {
    const text = await readBody(req);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (error) {
      throw new ConsulApiError(400, `Request decode failed: ${errorMessage(error)}`);
    }
    if (!isRecord(body)) throw new ConsulApiError(400, 'Request decode failed: not an object');
    return body;
  }

  /** PUT /v1/agent/service/register: adds (or replaces, by ID) the checks given; its other checks stay, as in Consul. */
  private registerFromAgent(body: Record<string, unknown>): void {
    const name = typeof body.Name === 'string' ? body.Name : '';
    if (name === '') throw new ConsulApiError(400, 'Missing service name');
    const serviceId = typeof body.ID === 'string' && body.ID !== '' ? body.ID : name;
    const single = isRecord(body.Check) ? [body.Check] : [];
    const many = Array.isArray(body.Checks) ? body.Checks.filter(isRecord) : [];
    const definitions = [...single, ...many].map((check, i, all) => agentCheck(check, serviceId, name, all.length === 1 ? undefined : i + 1));
    const index = this.index + 1;
    for (const check of definitions) this.addCheck(check.id, serviceId, name, check, index);
    this.changed(index);
  }

  /** PUT /v1/agent/check/update/<id>: `{ Status, Output }`. */
  private updateFromAgent(checkId: string, body: Record<string, unknown>): void {
    const status = String(body.Status ?? '');
    if (!STATUSES.has(status)) throw new ConsulApiError(400, `Invalid check status: '${status}'`);
    this.ttlUpdate(checkId, status as FakeCheckStatus, typeof body.Output === 'string' ? body.Output : '');
  }

  private ttlUpdate(checkId: string, status: FakeCheckStatus, output: string): void {
    if (this.records.get(checkId)?.catalog.Type !== 'ttl') throw new ConsulApiError(500, `CheckID "${checkId}" does not have associated TTL`);
    this.setStatus(checkId, status, output);
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

  /** A write needs the token: the anonymous one may not. */
  private writer(req: IncomingMessage, url: URL): void {
    if (!this.authorized(req, url)) throw new ConsulApiError(403, 'Permission denied');
  }
}

interface AgentCheckDefinition extends FakeCheckInput {
  readonly id: string;
  readonly notes: string;
}

/** One check of an agent registration, with Consul's defaults and refusals (structs.CheckType Validate). */
function agentCheck(check: Record<string, unknown>, serviceId: string, serviceName: string, position: number | undefined): AgentCheckDefinition {
  const duration = (value: unknown): number => (typeof value === 'string' ? (parseGoDuration(value) ?? 0) : typeof value === 'number' ? value : 0);
  const type = check.TTL !== undefined ? 'ttl' : check.HTTP !== undefined ? 'http' : check.TCP !== undefined ? 'tcp' : check.GRPC !== undefined ? 'grpc' : Array.isArray(check.Args) ? 'script' : undefined;
  if (type === undefined || (type === 'ttl' && duration(check.TTL) <= 0)) throw new ConsulApiError(400, 'Invalid check: TTL must be > 0 for TTL checks');
  if (type !== 'ttl' && duration(check.Interval) <= 0) throw new ConsulApiError(400, 'Invalid check: Interval must be > 0 for Script, HTTP, or TCP checks');
  const status = check.Status === undefined || check.Status === '' ? 'critical' : String(check.Status);
  if (!STATUSES.has(status)) throw new ConsulApiError(400, `Invalid check status: '${status}'`);
  const id = typeof check.CheckID === 'string' && check.CheckID !== '' ? check.CheckID : `service:${serviceId}${position === undefined ? '' : `:${position}`}`;
  const name = typeof check.Name === 'string' && check.Name !== '' ? check.Name : `Service '${serviceName}' check`;
  return { id, name, status: status as FakeCheckStatus, type, notes: typeof check.Notes === 'string' ? check.Notes : '' };
}

/**
 * Consul's index and wait parameters (agent/http.go parseWait, agent/consul/rpc.go blockingQuery):
 * wait defaults to 5 min, at most 10, and a wait of zero or less is the default.
 */
function parseBlocking(query: URLSearchParams): { index: number; waitMs: number } {
  const indexText = query.get('index') ?? '';
  const waitText = query.get('wait') ?? '';
  if (indexText !== '' && !/^\d+$/.test(indexText)) throw new ConsulApiError(400, 'Invalid index');
  const waitNs = waitText === '' ? undefined : parseGoDuration(waitText);
  if (waitText !== '' && waitNs === undefined) throw new ConsulApiError(400, 'Invalid wait time');
  const waitMs = waitNs === undefined || waitNs <= 0 ? DEFAULT_WAIT_MS : Math.min(MAX_WAIT_MS, waitNs / 1e6);
  return { index: indexText === '' ? 0 : Number(indexText), waitMs };
}
