/**
 * Replays each recorded transcript's client frames with a bare websocket against the fake exec
 * endpoint and compares what comes back with what Nomad 1.1.2 sent: decoded stdout and stderr, the
 * kinds and order of the final frames (close frames and `exited`), frame sizes, and the close code.
 * Data frames are compared by content, not by count: how output is cut into frames depends on timing.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { settle } from '../../src/clock/index.js';
import { decodeServerFrame, type ServerFrame } from '../../src/nomad/exec/frames.js';
import { EXEC_FIXTURES, index, startHarness, type Harness } from './harness.js';

interface Line {
  t: number;
  dir?: 'in' | 'out';
  raw?: string;
  close?: { code: number; reason: string };
  close_frame?: { code: number; reason: string };
}

function readTranscript(name: string): Line[] {
  return readFileSync(join(EXEC_FIXTURES, `${name}.jsonl`), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Line);
}

interface Received {
  stdout: string;
  stderr: string;
  /** Everything that is not data, in order: 'stdout.close', 'stderr.close', 'exited:N'. */
  finals: string[];
  maxDataFrame: number;
}

function tally(frames: ServerFrame[]): Received {
  const received: Received = { stdout: '', stderr: '', finals: [], maxDataFrame: 0 };
  for (const frame of frames) {
    if (frame.kind === 'stdout' || frame.kind === 'stderr') {
      received[frame.kind] += frame.data.toString('latin1');
      received.maxDataFrame = Math.max(received.maxDataFrame, frame.data.length);
    } else if (frame.kind === 'exited') received.finals.push(`exited:${frame.exitCode}`);
    else if (frame.kind !== 'noop') received.finals.push(frame.kind);
  }
  return received;
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

/** The recorded URL, pointed at the FakeNomad and at its allocation (the unknown one stays unknown). */
function localUrl(name: string): string {
  const recorded = new URL(index.cases[name]?.url ?? '');
  const path = recorded.pathname.replace(/allocation\/[^/]+\//, `allocation/${h.allocOf(name)}/`);
  return `${h.address.replace('http', 'ws')}${path}${recorded.search}`;
}

const cases = Object.keys(index.cases).filter((name) => name !== 'h_1mb_output');

test.each(cases)('%s: the fake answers the recorded client frames as Nomad did', async (name) => {
  const lines = readTranscript(name);
  const recordedIn = lines.filter((line) => line.dir === 'in' && line.raw !== undefined).map((line) => decodeServerFrame(line.raw ?? ''));
  const expected = tally(recordedIn);
  const url = localUrl(name);

  const ws = new WebSocket(url);
  const frames: ServerFrame[] = [];
  ws.on('message', (data: Buffer) => frames.push(decodeServerFrame(data.toString())));
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  const waitUntil = async (condition: () => boolean): Promise<void> => {
    while (!condition()) await settle();
  };
  await new Promise<void>((resolve) => ws.on('open', resolve));

  let inBefore = 0;
  let previousT = 0;
  for (const line of lines) {
    if (line.dir === 'in' && line.raw !== undefined) inBefore++;
    if (line.dir !== 'out') continue;
    // Send the next client frame once the output Nomad had sent before it has arrived here too.
    const want = tally(recordedIn.slice(0, inBefore));
    await waitUntil(() => {
      const got = tally(frames);
      return got.stdout.length >= want.stdout.length && got.stderr.length >= want.stderr.length;
    });
    // The recording waited seconds here (a2): let the command finish first, so holding back shows.
    if (index.cases[name]?.query.tty === false && line.t - previousT > 1000) {
      await h.fake.idle();
      await settle(20);
      expect(tally(frames).finals).toEqual(want.finals);
    }
    previousT = line.t;
    if (line.close_frame !== undefined) ws.close(line.close_frame.code, line.close_frame.reason);
    else ws.send(line.raw ?? '');
  }

  const close = await closed;
  const got = tally(frames);
  expect(got.stdout).toBe(expected.stdout);
  expect(got.stderr).toBe(expected.stderr);
  expect(got.finals).toEqual(expected.finals);
  expect(got.maxDataFrame).toBeLessThanOrEqual(4096);
  expect(close.code).toBe(lines.at(-1)?.close?.code);
  // j1's close is the echo of the client's own close frame; elsewhere the reason is Nomad's.
  if (lines.every((line) => line.close_frame === undefined)) expect(close.reason).toBe(lines.at(-1)?.close?.reason);
  await h.fake.idle();
});

test('h_1mb_output: 1,000,000 bytes in data frames of at most 4096 bytes, then the same final frames', async () => {
  const lines = readTranscript('h_1mb_output');
  const url = localUrl('h_1mb_output');
  const expectedFinals = tally(lines.filter((line) => line.dir === 'in').map((line) => decodeServerFrame(line.raw ?? ''))).finals;
  const ws = new WebSocket(url);
  const frames: ServerFrame[] = [];
  ws.on('message', (data: Buffer) => frames.push(decodeServerFrame(data.toString())));
  ws.on('open', () => ws.send('{"stdin":{"close":true}}'));
  const code = await new Promise<number>((resolve) => ws.on('close', resolve));
  const got = tally(frames);
  expect(got.stdout).toBe('a'.repeat(1_000_000));
  expect(got.maxDataFrame).toBe(4096);
  // Nomad cut the output into 245 frames (244 × 4096 + 576): the fewest possible; ours may be more.
  expect(frames.filter((frame) => frame.kind === 'stdout').length).toBeGreaterThanOrEqual(245);
  expect(got.finals).toEqual(expectedFinals);
  expect(code).toBe(1000);
});

test('hostile requests get Nomad’s answers and leave the fake serving', async () => {
  const base = h.address.replace('http', 'ws');
  const closeOf = (path: string, send?: string) =>
    new Promise<{ code: number; reason: string } | { status: number }>((resolve) => {
      const ws = new WebSocket(`${base}${path}`);
      ws.on('open', () => send !== undefined && ws.send(send));
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
      ws.on('unexpected-response', (_request, response) => {
        resolve({ status: response.statusCode ?? 0 });
        ws.on('error', () => undefined);
        ws.terminate();
      });
    });
  // A path Go cannot unescape is net/http's 400; an ID that is no UUID the server's lookup error (both as Nomad 1.1.2 answers).
  expect(await closeOf('/v1/client/allocation/%E0%A4%A/exec?task=main&command=%5B%22true%22%5D')).toEqual({ status: 400 });
  expect(await closeOf('/v1/client/allocation/%E0%A4%AA/exec?task=main&command=%5B%22true%22%5D')).toEqual({ code: 1011, reason: 'alloc lookup failed: index error: UUID must be 36 characters' });
  expect(await closeOf(`/v1/client/allocation/${h.allocId}/exec?task=main&command=not-json`)).toEqual({ status: 500 });
  expect(await closeOf(`/v1/client/allocation/${h.allocId}/exec?task=main&command=%5B%5D`)).toEqual({ code: 1008, reason: 'command is not present' });
  expect(await closeOf(`/v1/client/allocation/${h.allocId}/exec?task=main&command=%5B%22cat%22%5D`, '{"setup":{}}')).toEqual({ code: 1011, reason: 'unexpected message type: setup' });
  expect(await closeOf(`/v1/client/allocation/${h.allocId}/exec?task=main&command=%5B%22cat%22%5D`, 'not json')).toMatchObject({ code: 1011 });
  await h.fake.idle();
  const long = `/${'x'.repeat(300)}`;
  expect(await closeOf(`/v1/client/allocation/${h.allocId}/exec?task=main&command=${encodeURIComponent(JSON.stringify([long]))}`)).toMatchObject({ code: 1011 });
  await expect(h.client.exec(h.allocId, { task: 'main', command: ['true'] }).exitCode).resolves.toBe(0);
});
