/**
 * `warden serve --dev` as a user runs it: the installed package (test/cli/support/packedWarden.ts,
 * plain node, no node-pty), in a process of its own. It prints the base URL and curl lines that
 * work; a client claims a runner and runs a command over the WebSocket; SIGTERM ends it with exit
 * 0, and an execution still running is told so (an `error` message, close 1001), not dropped.
 */
import { spawn } from 'node:child_process';
import WebSocket from 'ws';
import { packedWarden, type PackedWarden } from '../cli/support/packedWarden.js';

let warden: PackedWarden;
let stop: (() => void) | undefined;
beforeAll(async () => {
  warden = await packedWarden();
}, 300_000);
// A failed run leaves no server behind.
afterEach(() => stop?.());

interface Message {
  type: string;
  data?: string | number;
}

function conversation(url: string): { messages: Message[]; opened: Promise<void>; closed: Promise<number>; ws: WebSocket } {
  const ws = new WebSocket(url);
  const messages: Message[] = [];
  ws.on('message', (data) => messages.push(JSON.parse((data as Buffer).toString()) as Message));
  return {
    ws,
    messages,
    opened: new Promise((resolve, reject) => ws.once('open', () => resolve()).once('error', reject)),
    closed: new Promise((resolve) => ws.once('close', (code) => resolve(code))),
  };
}

test('warden serve --dev: a playground a Poseidon client can use; SIGTERM tells running executions and exits 0', async () => {
  const child = spawn(warden.bin, ['--log-level', 'error', 'serve', '--dev', '--listen', '127.0.0.1:0'], { cwd: warden.project, env: { ...process.env, NO_COLOR: '1' } });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  stop = () => child.kill('SIGKILL');
  await new Promise<void>((resolve) =>
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('curl -X POST')) resolve();
    }),
  );
  const base = /at (http:\/\/127\.0\.0\.1:\d+\/api\/v1)\n/.exec(stdout)?.[1] ?? '';
  expect(base).not.toBe('');
  expect(stdout).toContain('node-pty is not installed: executions run without a terminal and read no input');
  // The printed curl lines, as a shell would send them: an environment, then a runner.
  const curl = stdout.split('\n').filter((line) => line.trim().startsWith('curl '));
  expect(curl).toHaveLength(2);
  const body = (line: string): string => /-d '(.*)'$/.exec(line)?.[1] ?? '';
  const put = await fetch(`${base}/execution-environments/1`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: body(curl[0]!) });
  expect(put.status).toBe(201);
  // Real time here: ask until the warm pool has a runner (each answer comes back at once).
  let claim: Response;
  for (;;) {
    claim = await fetch(`${base}/runners`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(curl[1]!) });
    if (claim.status !== 500) break;
    expect(await claim.json()).toMatchObject({ errorCode: 'NOMAD_OVERLOAD' });
  }
  expect(claim.status).toBe(200);
  const { runnerId } = (await claim.json()) as { runnerId: string };
  const execute = async (command: string): Promise<string> =>
    ((await (await fetch(`${base}/runners/${runnerId}/execute`, { method: 'POST', body: JSON.stringify({ command }) })).json()) as { websocketUrl: string }).websocketUrl;

  const hello = conversation(await execute('echo hello; echo oops >&2; exit 4'));
  expect(await hello.closed).toBe(1000);
  // Without a terminal, stdout and stderr are two pipes: their order between them is the command's business.
  expect(hello.messages[0]).toEqual({ type: 'start' });
  expect(hello.messages.slice(1, -1)).toEqual(expect.arrayContaining([{ type: 'stdout', data: 'hello\n' }, { type: 'stderr', data: 'oops\n' }]));
  expect(hello.messages.at(-1)).toEqual({ type: 'exit', data: 4 });

  const running = conversation(await execute('sleep 100'));
  await running.opened;
  while (running.messages.length === 0) await new Promise((resolve) => running.ws.once('message', resolve));
  child.kill('SIGTERM');
  expect(await running.closed).toBe(1001);
  expect(running.messages).toEqual([{ type: 'start' }, { type: 'error', data: 'the server is shutting down' }]);
  expect(await exited).toBe(0);
  expect(stderr).toBe('');
}, 60_000);
