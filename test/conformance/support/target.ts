/**
 * What a conformance case runs against: FakeNomad acting as a cluster on a VirtualClock (npm test),
 * or the real Nomad agent of the live tier (WARDEN_LIVE_NOMAD_ADDR set by test/live/run.ts). The
 * same case body talks to either through raw HTTP, the raw event stream and the exec websocket, so
 * it sees status codes, headers and bytes as a client does.
 *
 * Waiting is the one thing that differs: against the fake, `within` moves virtual time from one due
 * timer to the next, only once the fake and this client are quiet (QuietDriver), so what happens at
 * one virtual instant is done before the next begins; against the live agent it waits on the wall
 * clock for the event or the blocking query's answer, with a bound. No case sleeps.
 */
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { Pool } from 'undici';
import WebSocket from 'ws';
import { VirtualClock } from '../../../src/clock/index.js';
import { UndiciWire, type NomadWire, type WireResponse } from '../../../src/nomad/wire.js';
import type { HttpMethod } from '../../../src/nomad/transport.js';
import { FakeNomad } from '../../../src/testing/fakeNomad.js';
import { parseLossless } from '../../../src/testing/losslessJson.js';
import { QuietDriver, WireTally } from '../../../src/testing/quiet.js';
import { EventTap } from './eventTap.js';

export interface Answer {
  readonly status: number;
  /** Lower-case names, Node's view of the wire. */
  readonly headers: Readonly<Record<string, string>>;
  readonly text: string;
  /** The body as JSON (int64 kept exact as bigint where it does not fit a double). */
  json<T = unknown>(): T;
}

/** How an exec session ended, as a client sees it: the HTTP refusal, or the frames and the close. */
export type ExecOutcome =
  | { readonly http: number; readonly body: string }
  | { readonly frames: readonly Record<string, unknown>[]; readonly code: number; readonly reason: string };

export interface RegisterRace {
  /** Of the registers with EnforceIndex matching `jobId`, the share whose raft apply waits a little (default 1). */
  probability?: number;
  jobId?: string | RegExp;
}

export interface Target {
  /** `FakeNomad` or `Nomad 1.1.2 (live)`: for messages. */
  readonly name: string;
  readonly live: boolean;
  readonly address: string;
  /** Milliseconds on the target's clock: virtual for the fake, the wall clock for the live agent. */
  now(): number;
  request(method: HttpMethod, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>;
  /** A raw event stream (`query` without the leading `?`), once its first heartbeat arrived. */
  stream(query: string): Promise<EventTap>;
  /** Resolves with `work`, letting target time pass until it settles; rejects after `ms` of target time. */
  within<T>(what: string, ms: number, work: Promise<T>): Promise<T>;
  /** Blocking queries on `path` (each with the last answer's X-Nomad-Index) until `done` accepts an answer. */
  waitFor<T>(what: string, path: string, done: (body: T) => boolean, ms?: number): Promise<T>;
  /** A job ID of this run's own, purged when the suite ends. */
  jobId(name: string): string;
  /** An exec session: opens the websocket, sends `input` frames once open, collects until the close. */
  exec(path: string, input?: readonly unknown[]): Promise<ExecOutcome>;
  /**
   * Lets a register with EnforceIndex be checked before, and applied after, a purge sent with it.
   * The real agent does so by itself (it checks the index before the raft apply); the fake when told.
   */
  allowRegisterRaces(race?: RegisterRace): void;
  /**
   * The job's tasks exit with `exitCode` after `runMs`: on the live agent the job's own command does
   * it (see failingJob), on the fake the same failure is injected into `times` allocations.
   */
  failAllocations(jobId: string, failure: { exitCode: number; runMs: number; times: number }): void;
}

const LIVE = process.env.WARDEN_LIVE_NOMAD_ADDR;
const START = Date.UTC(2026, 11, 1, 9);

function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

async function answerOf(response: WireResponse): Promise<Answer> {
  const text = await response.text();
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(response.headers)) if (value !== undefined) headers[key] = String(value);
  return { status: response.statusCode, headers, text, json: <T>() => parseLossless(text) as T };
}

/** The parts both targets share: raw requests over one wire, streams, exec, job IDs, purging. */
abstract class BaseTarget implements Target {
  abstract readonly name: string;
  abstract readonly live: boolean;
  protected readonly jobs = new Set<string>();
  private readonly taps = new Set<EventTap>();
  private readonly pool: Pool;
  protected readonly wire: NomadWire;

  constructor(readonly address: string, layer?: (wire: NomadWire) => NomadWire) {
    this.pool = new Pool(address, { connections: 16, bodyTimeout: 0, headersTimeout: 0 });
    const network = new UndiciWire(this.pool);
    this.wire = layer ? layer(network) : network;
  }

  abstract now(): number;
  abstract within<T>(what: string, ms: number, work: Promise<T>): Promise<T>;
  abstract allowRegisterRaces(race?: RegisterRace): void;
  abstract failAllocations(jobId: string, failure: { exitCode: number; runMs: number; times: number }): void;

  async request(method: HttpMethod, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const text = body === undefined ? null : typeof body === 'string' ? body : JSON.stringify(body);
    const response = await this.wire.send({
      origin: this.address, method, path, body: text, signal: new AbortController().signal,
      headers: text === null ? headers : { 'content-type': 'application/json', ...headers },
    });
    return answerOf(response);
  }

  async stream(query: string): Promise<EventTap> {
    const abort = new AbortController();
    const response = await this.wire.send({ origin: this.address, method: 'GET', path: `/v1/event/stream?${query}`, headers: {}, body: null, signal: abort.signal });
    const tap = new EventTap(response, () => this.now(), () => abort.abort(), (what, ms, work) => this.within(what, ms, work));
    this.taps.add(tap);
    await tap.opened;
    return tap;
  }

  async waitFor<T>(what: string, path: string, done: (body: T) => boolean, ms = 30_000): Promise<T> {
    const loop = async (): Promise<T> => {
      let index = 0;
      let last: unknown;
      for (;;) {
        const separator = path.includes('?') ? '&' : '?';
        const answer = await this.request('GET', index === 0 ? path : `${path}${separator}index=${index}&wait=2s`);
        if (answer.status !== 200) throw new Error(`${what}: ${path} answered ${answer.status} ${answer.text}`);
        last = answer.json();
        if (done(last as T)) return last as T;
        // An empty table reports index 0, and index=0 does not block: wait for anything newer than 1 then.
        index = Math.max(Number(answer.headers['x-nomad-index'] ?? 0), 1);
      }
    };
    return this.within(what, ms, loop());
  }

  jobId(name: string): string {
    const id = `conformance-${name}-${randomBytes(4).toString('hex')}`;
    this.jobs.add(id);
    return id;
  }

  exec(path: string, input: readonly unknown[] = []): Promise<ExecOutcome> {
    const work = new Promise<ExecOutcome>((resolve, reject) => {
      const socket = new WebSocket(`${this.address.replace(/^http/, 'ws')}${path}`);
      const frames: Record<string, unknown>[] = [];
      let refused = false;
      socket.on('unexpected-response', (request, response) => {
        refused = true;
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        response.on('end', () => {
          // Nomad keeps the connection of a refusal before the upgrade open (Go's keep-alive), and ws
          // leaves a refused handshake's connection to whoever listens for this event: end it, and
          // answer once it is closed, so that a case leaves no socket behind.
          const answer = (): void => resolve({ http: response.statusCode ?? 0, body });
          const connection = request.socket;
          if (connection === null || connection.closed) answer();
          else connection.once('close', answer);
          socket.terminate();
        });
      });
      socket.on('open', () => {
        for (const frame of input) socket.send(JSON.stringify(frame));
      });
      socket.on('message', (data: Buffer) => frames.push(JSON.parse(data.toString('utf8')) as Record<string, unknown>));
      socket.on('close', (code, reason) => {
        if (!refused) resolve({ frames, code, reason: reason.toString('utf8') });
      });
      socket.on('error', (error) => {
        if (socket.readyState === WebSocket.CLOSED) reject(error);
      });
    });
    return this.within(`exec ${path}`, 30_000, work);
  }

  /** Stops the streams, purges this run's jobs, closes the connections. */
  async close(): Promise<void> {
    for (const tap of this.taps) tap.close();
    for (const id of this.jobs) await this.request('DELETE', `/v1/job/${encodeURIComponent(id)}?purge=true`).catch(() => undefined);
    await this.pool.destroy();
  }
}

/** FakeNomad with its acting cluster, on a VirtualClock driven only once the loopback parts are quiet. */
class FakeTarget extends BaseTarget {
  readonly name = 'FakeNomad';
  readonly live = false;

  private constructor(
    readonly fake: FakeNomad,
    readonly clock: VirtualClock,
    private readonly driver: QuietDriver,
    tally: WireTally,
  ) {
    super(fake.address, tally.layer);
  }

  static async start(): Promise<FakeTarget> {
    const clock = new VirtualClock({ start: START });
    const fake = await FakeNomad.start({ clock, acting: true, exec: { env: { HOME: tmpdir() } } });
    const tally = new WireTally();
    const driver = new QuietDriver(clock);
    driver.add({ server: fake.activity, client: tally });
    return new FakeTarget(fake, clock, driver, tally);
  }

  now(): number {
    return this.clock.now();
  }

  async within<T>(what: string, ms: number, work: Promise<T>): Promise<T> {
    let settled = false;
    const watched = work.finally(() => {
      settled = true;
    });
    watched.catch(() => undefined);
    const until = this.clock.now() + ms;
    for (;;) {
      await this.driver.quiet();
      if (settled) return watched;
      const now = this.clock.now();
      if (now >= until) throw new Error(`${this.name}: ${what}: not within ${ms} ms of virtual time`);
      const due = this.clock.nextDue();
      this.clock.advanceTo(due === undefined || due > until ? until : Math.max(due, now));
    }
  }

  allowRegisterRaces(race: RegisterRace = {}): void {
    this.fake.faults.raceRegisters(race);
  }

  failAllocations(jobId: string, failure: { exitCode: number; runMs: number; times: number }): void {
    this.fake.acting!.failAllocations({ jobId, ...failure });
  }

  /** Also fails a case that left a connection open (the fake keeps idle ones, as Nomad does): the live tier would hang on it. */
  override async close(): Promise<void> {
    const closing = super.close();
    await this.within('closing', 60_000, closing).catch(() => closing);
    await this.driver.quiet();
    const left = this.fake.openConnections;
    await this.fake.close();
    if (left > 0) throw new Error(`${this.name}: the case left ${left} connection(s) to the fake open; a client must close what it opened`);
  }
}

/** The live tier's real agent, shared by every suite: a case sees only the jobs it made. */
class LiveTarget extends BaseTarget {
  readonly name = 'Nomad 1.1.2 (live)';
  readonly live = true;

  now(): number {
    return wallNow();
  }

  within<T>(what: string, ms: number, work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${this.name}: ${what}: not within ${ms} ms`)), ms);
    });
    return Promise.race([work, bound]).finally(() => clearTimeout(timer));
  }

  allowRegisterRaces(): void {
    // The real agent checks EnforceIndex against its state before the raft apply: nothing to arm.
  }

  failAllocations(): void {
    // The job's own command exits: nothing to arm.
  }
}

/**
 * The target for the enclosing describe: a fresh FakeNomad for every case, or the live agent for the
 * whole file (its jobs purged after it).
 */
export function useTarget(): Target {
  let current: FakeTarget | LiveTarget | undefined;
  if (LIVE !== undefined && LIVE !== '') {
    beforeAll(() => {
      current = new LiveTarget(LIVE);
    });
    afterAll(() => current?.close());
  } else {
    beforeEach(async () => {
      current = await FakeTarget.start();
    });
    afterEach(async () => {
      await current?.close();
      current = undefined;
    });
  }
  return new Proxy({} as Target, {
    get(_, key: keyof Target) {
      if (current === undefined) throw new Error('the conformance target is used outside a test');
      const value = current[key];
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(current) : value;
    },
  });
}
