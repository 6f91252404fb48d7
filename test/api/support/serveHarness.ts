/**
 * `warden serve --dev` in this process, on a VirtualClock: the command itself (its embedded
 * FakeNomad acting as a cluster, real processes as runners), reached only as a client reaches it,
 * over loopback: HTTP with undici, WebSockets with ws, and Nomad's own HTTP API at the address the
 * command prints (as Poseidon's e2e suite reads Nomad). Time moves only when a test drives it, once
 * the cluster is quiet (a runner's command running keeps it busy, as the demo drives its clock);
 * requests that need no time (claims, files, executions) are simply awaited.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import WebSocket from 'ws';
import { createCliLogger } from '../../../src/cli/logging.js';
import { serve, type ServeOptions } from '../../../src/cli/serveCommand.js';
import { VirtualClock, settle } from '../../../src/clock/index.js';
import { QuietDriver } from '../../../src/testing/quiet.js';
import { NomadClient } from '../../../src/nomad/client.js';

export const START = Date.UTC(2026, 11, 1, 9);

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body as JSON (undefined when empty). */
  json: unknown;
}

/** A server message of Poseidon's WebSocket protocol. */
export interface Message {
  type: string;
  data?: string | number;
}

export interface Conversation {
  ws: WebSocket;
  messages: Message[];
  /** Every frame's raw text, for the schema test. */
  raw: string[];
  /** Resolves with the close code once the server closed the connection. */
  closed: Promise<{ code: number; reason: string }>;
  /** Resolves once a message of the type arrived. */
  next(type: string): Promise<Message>;
}

export interface ServeHarness {
  clock: VirtualClock;
  /** http://127.0.0.1:port (the API is under /api/v1). */
  url: string;
  api: string;
  /** The embedded FakeNomad's address, read from what the command printed. */
  nomadAddress: string;
  nomad: NomadClient;
  lines: string[];
  errors: string[];
  /** Every answer (its JSON body when it has one) and WebSocket message seen, for the schema test. */
  seen: { method: string; route: string; status: number; body: unknown; contentType?: string; text?: string }[];
  call(method: string, path: string, options?: { body?: unknown; raw?: string | Buffer; headers?: Record<string, string> }): Promise<Answer>;
  drive(ms: number, stepMs?: number): Promise<void>;
  driveUntil(done: () => boolean, maxMs?: number): Promise<void>;
  /** Resolves a promise while driving the clock (for what needs virtual time: Nomad's scheduling). */
  settled<T>(promise: Promise<T>, maxMs?: number): Promise<T>;
  /** PUT an environment (raw_exec) and wait until its pool is full. */
  environment(id: number, poolSize: number, extra?: Record<string, unknown>): Promise<void>;
  statistics(id: number): Promise<{ idleRunners: number; usedRunners: number } | undefined>;
  /** POST /runners once the pool has an idle runner: the runner's ID. */
  runner(environmentId: number, inactivityTimeout?: number): Promise<string>;
  copy(runnerId: string, files: Record<string, string>, remove?: string[]): Promise<Answer>;
  /** POST …/execute: the WebSocket URL. */
  execute(runnerId: string, execution: Record<string, unknown>): Promise<string>;
  connect(url: string, headers?: Record<string, string>): Promise<Conversation>;
  /** Execute and connect, then collect until the close: stdout, stderr, control messages. */
  run(runnerId: string, execution: Record<string, unknown>): Promise<{ stdout: string; stderr: string; control: Message[]; close: number }>;
  /** Ends the command as SIGTERM does; its exit code. */
  stop(): Promise<number>;
}

export function output(messages: readonly Message[]): { stdout: string; stderr: string; control: Message[] } {
  const text = (type: string): string => messages.filter((m) => m.type === type).map((m) => String(m.data)).join('');
  return { stdout: text('stdout'), stderr: text('stderr'), control: messages.filter((m) => !['stdout', 'stderr'].includes(m.type)) };
}

export async function startServe(options: ServeOptions = {}, env: Record<string, string> = {}, logs?: string[]): Promise<ServeHarness> {
  const clock = new VirtualClock({ start: START });
  const lines: string[] = [];
  const errors: string[] = [];
  const stop = new AbortController();
  // Time moves only once the embedded cluster and its client are quiet, and stands still while a runner's command runs.
  const driver = new QuietDriver(clock);
  const running = serve({ dev: true, listen: { host: '127.0.0.1', port: 0 }, ...options }, {
    env,
    write: (line) => lines.push(line),
    error: (line) => errors.push(line),
    clock,
    transport: { gzip: false },
    signal: stop.signal,
    quiet: driver,
    // Every record at debug level, as JSON lines, when the test reads them.
    ...(logs === undefined ? {} : { logger: createCliLogger({ format: 'json', level: 'debug', clock, write: (line) => logs.push(line) }) }),
  });
  let exitCode: number | undefined;
  void running.then((code) => (exitCode = code));
  const drive = async (ms: number, stepMs = 50): Promise<void> => {
    const until = clock.now() + ms;
    while (clock.now() < until) await driver.advanceTo(Math.min(until, clock.now() + stepMs));
    await settle(10);
  };
  const driveUntil = async (done: () => boolean, maxMs = 30_000): Promise<void> => {
    const until = clock.now() + maxMs;
    while (!done()) {
      if (clock.now() >= until) throw new Error(`not reached within ${maxMs} ms of virtual time`);
      await drive(50);
    }
  };
  const settled = async <T>(promise: Promise<T>, maxMs = 30_000): Promise<T> => {
    let finished = false;
    const watched = promise.finally(() => (finished = true));
    watched.catch(() => undefined);
    await driveUntil(() => finished, maxMs);
    return watched;
  };
  // The command prints its address once the pools are recovered and it listens.
  await driveUntil(() => lines.some((line) => line.includes('/api/v1')) || exitCode !== undefined, 10_000);
  const api = /(https?:\/\/127\.0\.0\.1:\d+)\/api\/v1/.exec(lines.join('\n'));
  // A self-signed server certificate is its own CA.
  const ca = options.tlsCert === undefined ? undefined : readFileSync(options.tlsCert);
  const dispatcher = ca === undefined ? undefined : new Agent({ connect: { ca } });
  const nomadAddress = /embedded FakeNomad at (http:\/\/127\.0\.0\.1:\d+)/.exec(lines.join('\n'))?.[1];
  if (api === null || nomadAddress === undefined) throw new Error(`warden serve --dev did not start: ${[...lines, ...errors].join('\n')}`);
  const url = api[1]!;
  const nomad = new NomadClient({ address: nomadAddress }, { clock, gzip: false });
  const seen: ServeHarness['seen'] = [];

  const call: ServeHarness['call'] = async (method, path, callOptions = {}) => {
    const body = callOptions.raw ?? (callOptions.body === undefined ? undefined : JSON.stringify(callOptions.body));
    const answer = await request(`${url}${path}`, {
      method: method as 'GET',
      ...(dispatcher === undefined ? {} : { dispatcher }),
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...env.WARDEN_SERVE_TOKEN === undefined ? {} : { 'poseidon-token': env.WARDEN_SERVE_TOKEN }, ...callOptions.headers },
      ...(body === undefined ? {} : { body }),
    });
    const text = await answer.body.text();
    const type = String(answer.headers['content-type'] ?? '');
    const json = type.startsWith('application/json') ? (JSON.parse(text) as unknown) : undefined;
    seen.push({ method, route: path.split('?')[0]!, status: answer.statusCode, body: json, contentType: type, text });
    return { status: answer.statusCode, headers: answer.headers, text, json };
  };

  const connect: ServeHarness['connect'] = (wsUrl, headers = {}) =>
    new Promise((resolve, reject) => {
      const token = env.WARDEN_SERVE_TOKEN;
      const ws = new WebSocket(wsUrl, { headers: { ...(token === undefined ? {} : { 'poseidon-token': token }), ...headers }, ...(ca === undefined ? {} : { ca }) });
      const messages: Message[] = [];
      const raw: string[] = [];
      const waiting: { type: string; resolve: (m: Message) => void }[] = [];
      ws.on('message', (data) => {
        const text = (data as Buffer).toString('utf8');
        raw.push(text);
        const message = JSON.parse(text) as Message;
        messages.push(message);
        seen.push({ method: 'WS', route: 'websocket', status: 101, body: message });
        for (const waiter of waiting.filter((w) => w.type === message.type)) {
          waiting.splice(waiting.indexOf(waiter), 1);
          waiter.resolve(message);
        }
      });
      const closed = new Promise<{ code: number; reason: string }>((done) => ws.on('close', (code, reason) => done({ code, reason: reason.toString() })));
      ws.once('open', () =>
        resolve({
          ws,
          messages,
          raw,
          closed,
          next: (type) => {
            const found = messages.find((m) => m.type === type);
            return found ? Promise.resolve(found) : new Promise((done) => waiting.push({ type, resolve: done }));
          },
        }),
      );
      ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode })));
      ws.once('error', reject);
    });

  const statistics: ServeHarness['statistics'] = async (id) => {
    const answer = await call('GET', '/api/v1/statistics/execution-environments');
    return (answer.json as Record<string, { idleRunners: number; usedRunners: number }>)[String(id)];
  };

  const harness: ServeHarness = {
    clock,
    url,
    api: `${url}/api/v1`,
    nomadAddress,
    nomad,
    lines,
    errors,
    seen,
    call,
    drive,
    driveUntil,
    settled,
    environment: async (id, poolSize, extra = {}) => {
      const answer = await settled(call('PUT', `/api/v1/execution-environments/${id}`, { body: { prewarmingPoolSize: poolSize, cpuLimit: 100, memoryLimit: 256, image: 'local', networkAccess: false, exposedPorts: [], ...extra } }));
      if (answer.status !== 201 && answer.status !== 204) throw new Error(`PUT environment ${id}: ${answer.status} ${answer.text}`);
      let idle = -1;
      while (idle < poolSize) {
        idle = (await statistics(id))?.idleRunners ?? 0;
        if (idle < poolSize) await drive(100);
      }
    },
    statistics,
    runner: async (environmentId, inactivityTimeout = 0) => {
      // The pool refills behind each claim: wait for an idle runner.
      while (((await statistics(environmentId))?.idleRunners ?? 0) === 0) await drive(100);
      const answer = await call('POST', '/api/v1/runners', { body: { executionEnvironmentId: environmentId, inactivityTimeout } });
      if (answer.status !== 200) throw new Error(`POST /runners: ${answer.status} ${answer.text}`);
      return (answer.json as { runnerId: string }).runnerId;
    },
    copy: (runnerId, files, remove = []) =>
      call('PATCH', `/api/v1/runners/${runnerId}/files`, {
        body: { copy: Object.entries(files).map(([path, content]) => ({ path, content: Buffer.from(content).toString('base64') })), delete: remove },
      }),
    execute: async (runnerId, execution) => {
      const answer = await call('POST', `/api/v1/runners/${runnerId}/execute`, { body: execution });
      if (answer.status !== 200) throw new Error(`execute: ${answer.status} ${answer.text}`);
      return (answer.json as { websocketUrl: string }).websocketUrl;
    },
    connect,
    run: async (runnerId, execution) => {
      const conversation = await connect(await harness.execute(runnerId, execution));
      const { code } = await conversation.closed;
      return { ...output(conversation.messages), close: code };
    },
    stop: async () => {
      stop.abort('SIGTERM');
      const code = await settled(running, 10_000);
      await nomad.close();
      await dispatcher?.close();
      return code;
    },
  };
  return harness;
}
