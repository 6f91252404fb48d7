/**
 * How sessions end, as Nomad 1.1.2 ends them. The fake plays Nomad's side: a stdin close under a tty
 * closes its pty master (the command hung up, exit 129, output cut; deferred to the next output once
 * a tty_size made the master blocking, recording j1), a command that exited while input still flows
 * ends the session at the next input (EPIPE in Nomad's stdin copy), and the close frame is followed at
 * once by the end of the TCP connection. The client never sends that tty stdin close, and input that
 * meets the closed connection is no error. Each is repeated: the failures they guard against were races.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import WebSocket from 'ws';
import { settle } from '../../src/clock/index.js';
import { loadNodePty } from '../../src/testing/fakeExec/nodePty.js';
import { spawnTerminal } from '../../src/testing/fakeExec/processes.js';
import { decodeServerFrame, type ServerFrame } from '../../src/nomad/exec/frames.js';
import { execUrl } from '../../src/nomad/exec/request.js';
import { collect, isLive, startHarness, type Harness } from './harness.js';

const RUNS = 10;

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

/** A bare websocket sending `frames` once open; resolves with every frame Nomad's side sent, decoded. */
function bareSession(command: string[], tty: boolean, frames: string[]): Promise<ServerFrame[]> {
  const ws = new WebSocket(execUrl({ address: h.address }, { allocId: h.allocId, task: 'main', command, tty }), { perMessageDeflate: false });
  const received: ServerFrame[] = [];
  ws.on('open', () => frames.forEach((frame) => ws.send(frame)));
  ws.on('message', (data: Buffer) => received.push(decodeServerFrame(data.toString())));
  ws.on('error', () => undefined);
  return new Promise((resolve) => ws.on('close', () => resolve(received)));
}

function stdoutOf(frames: ServerFrame[]): string {
  return frames.map((frame) => (frame.kind === 'stdout' ? frame.data.toString() : '')).join('');
}

describe('the fake, as Nomad 1.1.2', () => {
  test('a stdin close under a tty with no size sent hangs the command up: stdout closed, exit 129, no output after', async () => {
    const frames = await bareSession(['/bin/sh', '-c', 'sleep 5; echo late'], true, ['{"stdin":{"close":true}}']);
    expect(stdoutOf(frames)).toBe('');
    expect(frames.filter((frame) => frame.kind !== 'stdout')).toEqual([{ kind: 'stdout.close' }, { kind: 'exited', exitCode: 129 }]);
  });

  test('after a tty_size the close waits for the next output (j1: a waiting shell lives on), then hangs up', async () => {
    const frames = await bareSession(['/bin/sh', '-c', 'sleep 0.2; echo first; sleep 5; echo second'], true, [
      '{"tty_size":{"height":24,"width":80}}',
      '{"stdin":{"close":true}}',
    ]);
    expect(stdoutOf(frames)).toBe('first\r\n');
    expect(frames.at(-1)).toEqual({ kind: 'exited', exitCode: 129 });
  });

  test('a tty_size of 0×0 is taken, as Nomad’s pty takes it', async () => {
    const frames = await bareSession(['/bin/sh', '-c', 'echo ok'], true, ['{"tty_size":{"height":0,"width":0}}']);
    expect(stdoutOf(frames)).toBe('ok\r\n');
    expect(frames.at(-1)).toEqual({ kind: 'exited', exitCode: 0 });
  });

  test('with tty=false, input the exited command can no longer take ends the wait for the stdin close (EPIPE)', async () => {
    const ws = new WebSocket(execUrl({ address: h.address }, { allocId: h.allocId, task: 'main', command: ['/bin/sh', '-c', 'exit 4'], tty: false }), { perMessageDeflate: false });
    const received: ServerFrame[] = [];
    ws.on('message', (data: Buffer) => received.push(decodeServerFrame(data.toString())));
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    await new Promise((resolve) => ws.on('open', resolve));
    await h.fake.idle();
    // The command is gone and nothing final was sent (a2): Nomad waits for stdin.
    expect(received).toEqual([]);
    ws.send('{"stdin":{"data":"aGkK"}}');
    expect(await closed).toBe(1000);
    expect(received).toEqual([{ kind: 'stderr.close' }, { kind: 'stdout.close' }, { kind: 'exited', exitCode: 4 }]);
  });
});

describe('the fake’s terminal', () => {
  test('a command’s output is whole however late it is read: the terminal stays until its end is read (Nomad reads to the end first)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'warden-pty-'));
    // Less than a terminal's buffer: the command ends without its output being read.
    const script = 'echo $$ > pid; head -c 2000 /dev/zero | tr "\\0" a; exit 5';
    const child = spawnTerminal({ file: '/bin/sh', args: ['-c', script], cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } }, await loadNodePty());
    const chunks: Buffer[] = [];
    child.onOutput((_stream, data) => chunks.push(data));
    const done = new Promise<number>((resolve) => child.onDone(resolve));
    try {
      // Nothing read until the command is gone.
      child.pauseOutput(true);
      let commandPid = 0;
      for (let turn = 0; turn < 20_000 && (commandPid === 0 || isLive(commandPid)); turn++) {
        await settle(5);
        if (commandPid === 0 && existsSync(join(dir, 'pid'))) commandPid = Number(readFileSync(join(dir, 'pid'), 'utf8'));
      }
      expect(commandPid).toBeGreaterThan(0);
      expect(isLive(commandPid)).toBe(false);
      // node-pty would drop the unread output 200 ms after its process exits: that process waits.
      expect(isLive(child.pid)).toBe(true);
      child.pauseOutput(false);
      await expect(done).resolves.toBe(5);
      expect(Buffer.concat(chunks).toString()).toBe('a'.repeat(2_000));
    } finally {
      // A paused terminal whose holder waits keeps the test process alive: end it however the test went.
      child.pauseOutput(false);
      child.signalGroup('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the client', () => {
  test(`tty with no stdin runs to its end with all its output, ${RUNS} times (no stdin close sent)`, async () => {
    for (let run = 0; run < RUNS; run++) {
      const session = h.client.exec(h.allocId, { task: 'main', command: ['/bin/sh', '-c', 'sleep 0.02; seq 1 500'], tty: true });
      const [stdout, code] = await Promise.all([collect(session.stdout), session.exitCode]);
      expect({ run, code, stdout: stdout.toString() }).toEqual({ run, code: 0, stdout: Array.from({ length: 500 }, (_, i) => `${i + 1}\r\n`).join('') });
    }
  });

  test(`1 MB of stdin still flowing when the command exits is no error: the exit code and output arrive, ${RUNS} times`, async () => {
    for (let run = 0; run < RUNS; run++) {
      const chunk = Buffer.alloc(16 * 1024, 0x61);
      let sent = 0;
      const stdin = new Readable({
        read() {
          sent += chunk.length;
          this.push(sent > 4 * 1024 * 1024 ? null : chunk);
        },
      });
      const session = h.client.exec(h.allocId, { task: 'main', command: ['head', '-c', '3'], stdin });
      const [stdout, code] = await Promise.all([collect(session.stdout), session.exitCode]);
      expect({ run, code, stdout: stdout.toString() }).toEqual({ run, code: 0, stdout: 'aaa' });
      expect(sent).toBeGreaterThan(1024 * 1024);
    }
  });
});
