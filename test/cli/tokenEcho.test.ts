/**
 * A server that echoes credentials: the Nomad token it was sent, the Consul token, the password of
 * NOMAD_ADDR, in error bodies, response headers, a garbled batch, the event stream's error text and
 * an exec close reason. Whatever Warden shows or logs of it (`exec`, `gate`, `watch --json`,
 * problems$, the logger) has every one of them scrubbed, the rest of the text kept.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import { WebSocketServer } from 'ws';
import { execInAllocation } from '../../src/cli/execCommand.js';
import { gate } from '../../src/cli/gateCommand.js';
import { watch } from '../../src/cli/watchCommand.js';
import { VirtualClock } from '../../src/clock/index.js';
import { ConsulClient } from '../../src/consul/client.js';
import { consulConfigFromEnv } from '../../src/consul/config.js';
import { nomadConfigFromEnv } from '../../src/nomad/config.js';
import { createSupervisor } from '../../src/supervisor/index.js';
import type { SupervisorProblem } from '../../src/supervisor/types.js';
import { collect } from '../exec/harness.js';
import { until } from '../nomad/support.js';

const NOMAD_TOKEN = '5f0e7c1a-93d4-4b8e-a1c2-7d6e5f4a3b21';
const CONSUL_TOKEN = 'c0ffee00-1d2e-4f3a-8b9c-0a1b2c3d4e5f';
const PASSWORD = 'hunter2-s3cr3t';
const ALLOC = '8a1b2c3d-0000-4000-8000-000000000001';
/** Refused at the upgrade with a plain HTTP status, as Nomad before 2.0.3 does. */
const ALLOC_REFUSED_BY_STATUS = '8a1b2c3d-0000-4000-8000-000000000002';
const START = Date.UTC(2026, 10, 29, 17);

/** Every piece of eight characters of every secret: a leak of part of one is a leak too. */
function leaks(text: string): string[] {
  return [NOMAD_TOKEN, CONSUL_TOKEN, PASSWORD].flatMap((secret) =>
    Array.from({ length: secret.length - 7 }, (_, i) => secret.slice(i, i + 8)).filter((piece) => text.includes(piece)),
  );
}

interface EchoServer {
  address: string;
  /** Event-stream connections so far. */
  streams: number;
  close(): Promise<void>;
}

/**
 * The echoing server. The event stream's first connection sends `{}`, a garbled batch whose text
 * holds the token, then Nomad-style raw error text with it and closes; the next is refused with a
 * 403 that echoes it (the stream gives up). Job reads, and the allocation listing for prefix ffff,
 * fail with a 500 echoing all three, in the body and in headers. Exec: a close reason with the
 * token, or (the second allocation) a 403 body.
 */
async function startEchoServer(): Promise<EchoServer> {
  const state = { streams: 0 };
  const sent = (req: IncomingMessage): string => String(req.headers['x-nomad-token'] ?? req.headers['x-consul-token'] ?? '');
  const json = (res: ServerResponse, value: unknown): void => void res.setHeader('X-Nomad-Index', '3').setHeader('Content-Type', 'application/json').end(JSON.stringify(value));
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const token = sent(req);
    if (url.pathname === '/v1/event/stream') {
      state.streams++;
      if (state.streams > 1) return void res.writeHead(403, { 'X-Echo-Token': token }).end(`Permission denied: token ${token} may not read the stream`);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{}\n');
      res.write(`{"Events":[{"Topic":"Allocation","Key":"${token}","Payload":\u0007{"Allocation":{"ID":"${token}"}}}],"Index":5}\n`);
      return void res.end(`rpc error: token ${token} expired (basic auth ops:${PASSWORD})`);
    }
    const prefix = url.searchParams.get('prefix');
    if (url.pathname === '/v1/allocations' && prefix !== 'ffff') {
      return json(res, prefix === null ? [] : [ALLOC, ALLOC_REFUSED_BY_STATUS].filter((id) => id.startsWith(prefix)).map((ID) => ({ ID, JobID: 'web', TaskGroup: 'app', ClientStatus: 'running' })));
    }
    if (url.pathname.startsWith('/v1/allocation/')) {
      const ID = url.pathname.slice('/v1/allocation/'.length);
      return json(res, { ID, JobID: 'web', TaskGroup: 'app', Namespace: 'default', ModifyIndex: 3, Job: { ID: 'web', TaskGroups: [{ Name: 'app', Tasks: [{ Name: 'main' }] }] } });
    }
    if (url.pathname === '/v1/health/state/any') {
      return void res.writeHead(403, { 'X-Echo-Token': token }).end(`ACL not found: ${token}`);
    }
    res.writeHead(500, { 'X-Echo-Token': token, 'Retry-After': token }).end(`rpc error: lookup with token ${token} and password ${PASSWORD} failed; consul said ${CONSUL_TOKEN}`);
  });
  const sockets = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req: IncomingMessage, socket, head) => {
    const token = sent(req);
    if (req.url?.includes(ALLOC_REFUSED_BY_STATUS)) {
      socket.end(`HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nX-Echo-Token: ${token}\r\n\r\nPermission denied for ${token}`);
      return;
    }
    sockets.handleUpgrade(req, socket, head, (ws) => ws.close(1008, `permission denied: ${token}`));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    get streams() {
      return state.streams;
    },
    close: async () => {
      sockets.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

let echo: EchoServer;
let env: Record<string, string>;
beforeEach(async () => {
  echo = await startEchoServer();
  env = { NOMAD_ADDR: `http://ops:${PASSWORD}@${echo.address}`, NOMAD_TOKEN, CONSUL_HTTP_ADDR: echo.address, CONSUL_HTTP_TOKEN: CONSUL_TOKEN };
});
afterEach(async () => {
  await echo.close();
});

test('exec: the close reason and the refused upgrade body echo the token; stderr has it scrubbed', async () => {
  for (const [alloc, said] of [
    [ALLOC, 'failed to exec into task: permission denied: [redacted]\n'],
    [ALLOC_REFUSED_BY_STATUS, 'failed to exec into task: Permission denied for [redacted]\n'],
  ] as const) {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const [out, err] = [collect(stdout), collect(stderr)];
    const code = await execInAllocation(alloc, ['true'], {}, { env, stdin: Readable.from([]), stdout, stderr, clock: new VirtualClock({ start: START }) });
    stdout.end();
    stderr.end();
    const text = `${(await out).toString()}${(await err).toString()}`;
    expect(code).toBe(1);
    expect(text).toBe(said);
    expect(leaks(text)).toEqual([]);
  }
});

test('exec: an error body that echoes every secret, before the session starts', async () => {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const err = collect(stderr);
  const code = await execInAllocation('ffff', ['true'], {}, { env, stdin: Readable.from([]), stdout, stderr, clock: new VirtualClock({ start: START }) });
  stdout.end();
  stderr.end();
  const text = (await err).toString();
  expect(code).toBe(1);
  expect(text).toBe('Error querying allocation: Nomad GET /v1/allocations?prefix=ffff: 500 (rpc error: lookup with token [redacted] and password [redacted] failed; consul said [redacted])\n');
  expect(leaks(text)).toEqual([]);
});

test.each([false, true])('gate (json %s): the job read fails with a body and headers echoing every secret; the printed reason is scrubbed', async (json) => {
  const clock = new VirtualClock({ start: START });
  const lines: string[] = [];
  const code = await gate('web', { json }, { env, write: (line) => lines.push(line), clock, transport: { gzip: false } });
  const text = lines.join('\n');
  expect(code).toBe(1);
  expect(text).toContain('rpc error: lookup with token [redacted] and password [redacted] failed; consul said [redacted]');
  expect(leaks(text)).toEqual([]);
});

test('watch --json: the skipped batch, the stream error, the refusal and Consul\'s answer are printed scrubbed; exit 2', async () => {
  const clock = new VirtualClock({ start: START });
  const lines: string[] = [];
  let exitCode: number | undefined;
  void watch({ json: true }, { env, write: (line) => lines.push(line), clock, transport: { gzip: false } }).then((code) => (exitCode = code));
  await until(clock, () => exitCode !== undefined, 'the watch to give up', { stepMs: 250, maxMs: 120_000 });
  const problems = lines.map((line) => JSON.parse(line) as { type: string; kind?: string; message?: string }).filter((record) => record.type === 'problem');
  expect(exitCode).toBe(2);
  expect(problems.map((p) => p.kind)).toEqual(expect.arrayContaining(['bad-payload', 'stream-failed', 'consul-unavailable']));
  expect(problems.find((p) => p.kind === 'bad-payload')?.message).toMatch(/^event stream batch 5 could not be decoded and was skipped: .*\[redacted\]/);
  expect(problems.find((p) => p.kind === 'stream-failed')?.message).toContain('Permission denied: token [redacted] may not read the stream');
  expect(problems.find((p) => p.kind === 'consul-unavailable')?.message).toContain('ACL not found: [redacted]');
  expect(leaks(lines.join('\n'))).toEqual([]);
});

test('watch (lines for people) and an unreachable gate show the address without its password', async () => {
  const clock = new VirtualClock({ start: START });
  const lines: string[] = [];
  const stop = new AbortController();
  const watching = watch({}, { env, write: (line) => lines.push(line), clock, transport: { gzip: false }, signal: stop.signal });
  await until(clock, () => lines.length > 0, 'a connection line');
  stop.abort();
  await watching;
  expect(lines[0]).toMatch(new RegExp(`\\[connecting\\] http://\\[redacted\\]@${echo.address.replace(/\./g, '\\.')}$`));
  const gateLines: string[] = [];
  const closed = `http://ops:${PASSWORD}@127.0.0.1:1`;
  expect(await gate('web', {}, { env: { ...env, NOMAD_ADDR: closed }, write: (line) => gateLines.push(line), clock, transport: { gzip: false } })).toBe(2);
  expect(gateLines[0]).toMatch(/^✘ Nomad at http:\/\/\[redacted\]@127\.0\.0\.1:1 could not be reached: /);
  expect(leaks([...lines, ...gateLines].join('\n'))).toEqual([]);
});

test('problems$ and the logger: every record scrubbed, the stream error text included', async () => {
  const clock = new VirtualClock({ start: START });
  const logged: string[] = [];
  const log = (fields: object, message: string): void => void logged.push(`${message} ${JSON.stringify(fields)}`);
  const problems: SupervisorProblem[] = [];
  const consul = new ConsulClient(consulConfigFromEnv(env), { clock, gzip: false });
  const supervisor = createSupervisor({ nomad: nomadConfigFromEnv(env), clock, consul, logger: { debug: log, info: log, warn: log, error: log } });
  supervisor.problems$.subscribe((problem) => problems.push(problem));
  try {
    await until(clock, () => problems.some((p) => p.kind === 'stream-failed'), 'the stream to give up', { stepMs: 250, maxMs: 120_000 });
    const text = `${JSON.stringify(problems)}\n${logged.join('\n')}`;
    // The raw error text that ended the first connection reached the log, scrubbed.
    expect(logged.join('\n')).toContain('rpc error: token [redacted] expired (basic auth [redacted])');
    expect(problems.length).toBeGreaterThanOrEqual(3);
    expect(leaks(text)).toEqual([]);
  } finally {
    await supervisor.stop();
    await consul.close();
  }
});
