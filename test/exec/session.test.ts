/**
 * The session around the socket: the machine's heartbeats and deadline on a VirtualClock, cancellation
 * and timeout leaving no process behind, backpressure on a 200 MB output, and malformed or missing
 * servers turned into typed errors.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createActor, fromCallback } from 'xstate';
import WebSocket, { WebSocketServer } from 'ws';
import { tmpdir } from 'node:os';
import { VirtualClock, settle } from '../../src/clock/index.js';
import { ExecClient } from '../../src/exec/execClient.js';
import { ExecConnectionLostError, ExecPermissionDeniedError, ExecProtocolError, ExecTimeoutError } from '../../src/nomad/exec/errors.js';
import { KILL_GRACE_MS, attachFakeExec } from '../../src/testing/fakeExec/attachFakeExec.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { EXEC_HEARTBEAT_MS, execSessionMachine, type ExecSessionInput, type ExecTransportCommand } from '../../machines/execSession.js';
import { collect, survivorsInGroup, opened, startHarness, type Harness } from './harness.js';

describe('the session machine', () => {
  function scripted() {
    const received: ExecTransportCommand[] = [];
    let sendBack: (event: { type: 'TRANSPORT.OPENED' } | { type: 'TRANSPORT.EXITED'; exitCode: number }) => void = () => undefined;
    let stopped = false;
    const transport = fromCallback<ExecTransportCommand, ExecSessionInput>(({ sendBack: send, receive }) => {
      sendBack = send;
      receive((command) => received.push(command));
      return () => {
        stopped = true;
      };
    });
    return { received, transport, open: () => sendBack({ type: 'TRANSPORT.OPENED' }), exit: (exitCode: number) => sendBack({ type: 'TRANSPORT.EXITED', exitCode }), stopped: () => stopped };
  }
  const input = { sessionId: 's', allocId: 'a', task: 'main', command: ['true'], tty: false };

  test('sends a heartbeat every 10 s while open, none while connecting, and stops the transport on exit', () => {
    const clock = new VirtualClock();
    const t = scripted();
    const actor = createActor(execSessionMachine.provide({ actors: { transport: t.transport } }), { input, clock }).start();
    clock.advance(EXEC_HEARTBEAT_MS * 2);
    expect(t.received).toHaveLength(0);
    t.open();
    clock.advance(EXEC_HEARTBEAT_MS - 1);
    expect(t.received).toHaveLength(0);
    clock.advance(1);
    clock.advance(EXEC_HEARTBEAT_MS * 2);
    expect(t.received).toEqual([{ type: 'HEARTBEAT' }, { type: 'HEARTBEAT' }, { type: 'HEARTBEAT' }]);
    t.exit(4);
    expect(actor.getSnapshot().output).toEqual({ status: 'exited', exitCode: 4 });
    expect(t.stopped()).toBe(true);
    expect(clock.pending()).toBe(0);
  });

  test('the deadline cancels from connecting or open, and only when one was given', () => {
    const clock = new VirtualClock();
    const t = scripted();
    const timed = createActor(execSessionMachine.provide({ actors: { transport: t.transport } }), { input: { ...input, timeoutMs: 5_000 }, clock }).start();
    clock.advance(4_999);
    expect(timed.getSnapshot().status).toBe('active');
    clock.advance(1);
    expect(timed.getSnapshot().output).toEqual({ status: 'cancelled', reason: 'timeout' });
    expect(t.stopped()).toBe(true);

    const u = scripted();
    const unbounded = createActor(execSessionMachine.provide({ actors: { transport: u.transport } }), { input, clock }).start();
    u.open();
    clock.advance(3600 * 1000);
    expect(unbounded.getSnapshot().value).toEqual({ running: { phase: 'open', deadline: 'unbounded' } });
    unbounded.send({ type: 'CANCEL' });
    expect(unbounded.getSnapshot().output).toEqual({ status: 'cancelled', reason: 'cancelled' });
  });
});

describe('against the fake exec endpoint', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  test('a timeout on the virtual clock ends the session and the whole process group', async () => {
    const session = h.client.exec(h.allocId, { task: 'main', command: ['/bin/sh', '-c', 'sleep 1000 & sleep 1000; wait'], timeoutMs: 60_000 });
    await opened(session);
    await settle(20);
    const [pid] = [...h.fake.running];
    h.clock.advance(59_999);
    expect(session.actor.getSnapshot().status).toBe('active');
    h.clock.advance(1);
    await expect(session.exitCode).rejects.toBeInstanceOf(ExecTimeoutError);
    await h.fake.idle();
    expect(await survivorsInGroup(pid ?? 0)).toEqual([]);
  });

  test('a process that ignores SIGHUP is killed after the grace period', async () => {
    const controller = new AbortController();
    const session = h.client.exec(h.allocId, { task: 'main', command: ['/bin/sh', '-c', 'trap "" HUP; echo ready; while :; do sleep 1; done'], signal: controller.signal });
    for await (const chunk of session.stdout) if (String(chunk).includes('ready')) break;
    const [pid] = [...h.fake.running];
    controller.abort();
    await expect(session.exitCode).rejects.toMatchObject({ name: 'ExecAbortedError' });
    await settle(50);
    expect(h.fake.running.size).toBe(1);
    h.clock.advance(KILL_GRACE_MS);
    await h.fake.idle();
    expect(await survivorsInGroup(pid ?? 0)).toEqual([]);
  });

  test('backpressure: 200 MB read slowly stays within 64 MiB of extra memory', async () => {
    const size = 200_000_000;
    const session = h.client.exec(h.allocId, { task: 'main', command: ['head', '-c', String(size), '/dev/zero'] });
    const base = process.memoryUsage();
    let peak = 0;
    let total = 0;
    let chunks = 0;
    const slow = new Writable({
      highWaterMark: 64 * 1024,
      write(chunk: Buffer, _encoding, callback) {
        total += chunk.length;
        // Slow reader: yield to the event loop after every chunk, and sample memory now and then.
        if (++chunks % 256 === 0) {
          const now = process.memoryUsage();
          peak = Math.max(peak, now.rss - base.rss);
        }
        setImmediate(callback);
      },
    });
    await pipeline(session.stdout, slow);
    await expect(session.exitCode).resolves.toBe(0);
    expect(total).toBe(size);
    expect(peak).toBeLessThan(64 * 1024 * 1024);
  }, 60_000);

  test('100 MB of stdin into a slow reader arrives whole within 64 MiB of extra memory', async () => {
    const size = 100_000_000;
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const base = process.memoryUsage.rss();
    let sent = 0;
    let peak = 0;
    const source = new Readable({
      read() {
        peak = Math.max(peak, process.memoryUsage.rss() - base);
        const next = Math.min(chunk.length, size - sent);
        sent += next;
        this.push(next === 0 ? null : chunk.subarray(0, next));
      },
    });
    // The command reads nothing for a while: everything sent meanwhile would pile up somewhere.
    const session = h.client.exec(h.allocId, { task: 'main', command: ['/bin/sh', '-c', 'sleep 1; wc -c'], stdin: source });
    const [stdout, code] = await Promise.all([collect(session.stdout), session.exitCode]);
    peak = Math.max(peak, process.memoryUsage.rss() - base);
    expect(code).toBe(0);
    expect(stdout.toString().trim()).toBe(String(size));
    expect(peak).toBeLessThan(64 * 1024 * 1024);
  }, 60_000);
});

describe('servers that do not behave', () => {
  /** A websocket server that plays `script` on each connection, recording what the client sends. */
  async function scriptedServer(script: (ws: WebSocket) => void) {
    const server = createServer();
    const wss = new WebSocketServer({ server });
    const received: string[] = [];
    wss.on('connection', (ws) => {
      ws.on('message', (data: Buffer) => received.push(data.toString()));
      script(ws);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const clock = new VirtualClock();
    const address = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return {
      clock,
      received,
      client: new ExecClient({ address, token: 'secret-token' }, { clock }),
      close: async () => {
        for (const ws of wss.clients) ws.terminate();
        wss.close();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
  }
  const run = (client: ExecClient, options: Partial<Parameters<ExecClient['exec']>[1]> = {}) =>
    client.exec('x', { task: 'main', command: ['true'], ...options });

  test('a TCP drop right after exited is a normal end (newer Nomad); before it, a lost connection', async () => {
    const after = await scriptedServer((ws) => {
      ws.send('{"stdout":{"data":"aGk="}}');
      ws.send('{"exited":true,"result":{"exit_code":2}}', () => ws.terminate());
    });
    const session = run(after.client);
    const [code, stdout] = await Promise.all([session.exitCode, collect(session.stdout)]);
    expect([code, stdout.toString()]).toEqual([2, 'hi']);
    await after.close();

    const before = await scriptedServer((ws) => ws.send('{"stdout":{"data":"aGk="}}', () => ws.terminate()));
    const error: unknown = await run(before.client).exitCode.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecConnectionLostError);
    expect(error).toMatchObject({ closeCode: 1006 });
    await before.close();

    const normalClose = await scriptedServer((ws) => ws.close(1000));
    await expect(run(normalClose.client).exitCode).rejects.toMatchObject({ name: 'ExecConnectionLostError', closeCode: 1000 });
    await normalClose.close();
  });

  test('the heartbeat reaches the server every 10 s of the clock; stdin and resize frames are Nomad’s; a tty’s stdin end sends nothing', async () => {
    const server = await scriptedServer(() => undefined);
    const session = run(server.client, { stdin: 'pipe', tty: true });
    session.resize(30, 100);
    // A terminal reporting 0×0 is sent as is, as `nomad alloc exec` does.
    session.resize(0, 0);
    expect(() => session.resize(-1, 100)).toThrow(RangeError);
    expect(() => session.resize(30, 65_536)).toThrow(RangeError);
    expect(() => session.resize(30, Number.NaN)).toThrow(RangeError);
    session.stdin.write('ls\n');
    await opened(session);
    server.clock.advance(EXEC_HEARTBEAT_MS * 3);
    session.stdin.end();
    await new Promise<void>((resolve) => session.stdin.on('finish', resolve));
    await settle(20);
    // No stdin close under a tty: Nomad would close its pty master and hang the command up.
    expect(server.received).toEqual(['{"tty_size":{"height":30,"width":100}}', '{"tty_size":{"height":0,"width":0}}', '{"stdin":{"data":"bHMK"}}', '{}', '{}', '{}']);
    await server.close();
  });

  test('a malformed frame is a protocol error, a refused connection a lost connection; the token shows in neither', async () => {
    const server = await scriptedServer((ws) => ws.send('{"stdout":{"data":"not base64!"}}'));
    const error = await run(server.client).exitCode.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecProtocolError);
    expect(String((error as Error).message)).not.toContain('secret-token');
    await server.close();

    const refused = await run(server.client).exitCode.catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ExecConnectionLostError);
    expect(String((refused as Error).message)).not.toContain('secret-token');
  });
});

describe('ACLs and origins on the fake', () => {
  test('a missing or wrong token is refused before the upgrade and typed as permission denied; the token never shows', async () => {
    const nomad = await FakeNomad.start({ clock: new VirtualClock(), token: 'right-token', exec: false });
    const fake = attachFakeExec(nomad.server, { clock: nomad.clock, token: 'right-token', lookup: () => ({ tasks: ['main'], workdir: tmpdir() }) });
    for (const token of [undefined, 'wrong-token']) {
      const client = new ExecClient({ address: nomad.address, ...(token === undefined ? {} : { token }) }, { clock: nomad.clock });
      const error: unknown = await client.exec('any', { task: 'main', command: ['true'] }).exitCode.catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ExecPermissionDeniedError);
      expect(error).toMatchObject({ status: 403, reason: token === undefined ? 'Permission denied' : 'ACL token not found' });
      expect(JSON.stringify(error) + String(error)).not.toContain('wrong-token');
    }
    const allowed = new ExecClient({ address: nomad.address, token: 'right-token' }, { clock: nomad.clock });
    await expect(allowed.exec('any', { task: 'main', command: ['true'] }).exitCode).resolves.toBe(0);
    const crossOrigin = new WebSocket(`${nomad.address.replace('http', 'ws')}/v1/client/allocation/any/exec?task=main&command=%5B%22true%22%5D`, {
      headers: { 'X-Nomad-Token': 'right-token' },
      origin: 'http://elsewhere.example',
    });
    const status = await new Promise<number>((resolve) => crossOrigin.on('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0)));
    crossOrigin.on('error', () => undefined);
    crossOrigin.terminate();
    expect(status).toBe(403);
    await fake.close();
    await nomad.close();
  });
});

test('closing the fake kills every command at once, even one that ignores SIGHUP', async () => {
  const h = await startHarness();
  const session = h.client.exec(h.allocId, { task: 'main', command: ['/bin/sh', '-c', 'trap "" HUP; echo ready; while :; do sleep 1; done'] });
  for await (const chunk of session.stdout) if (String(chunk).includes('ready')) break;
  const [pid] = [...h.fake.running];
  await h.close();
  await h.fake.idle();
  expect(await survivorsInGroup(pid ?? 0)).toEqual([]);
  await expect(session.exitCode).rejects.toBeInstanceOf(ExecConnectionLostError);
});
