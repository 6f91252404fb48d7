/**
 * Every recorded exec case (a–j), end to end: ExecClient → websocket → the fake exec endpoint → a
 * real local process, with the outcome Nomad 1.1.2 gave (test/fixtures/nomad-1.1.2/exec/index.json).
 */
import { Readable } from 'node:stream';
import { settle } from '../../src/clock/index.js';
import {
  ExecAbortedError,
  ExecAllocationNotFoundError,
  ExecCommandStartError,
  ExecTaskNotFoundError,
} from '../../src/nomad/exec/errors.js';
import { EXEC_HEARTBEAT_MS } from '../../machines/execSession.js';
import { Recorder, collect, index, opened, startHarness, type Harness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

function recorded(name: string) {
  const c = index.cases[name];
  if (c === undefined) throw new Error(`no case ${name}`);
  return c;
}

function run(name: string, extra: Parameters<Harness['client']['exec']>[1] extends infer O ? Partial<O> : never = {}) {
  const c = recorded(name);
  return h.client.exec(h.allocOf(name), { task: c.query.task, command: c.query.command, tty: c.query.tty, ...extra });
}

/** A tty shell of a recorded case, sized as recorded, once its prompt has appeared. */
async function shellAtPrompt(name: string, rows: number, cols: number, extra: { signal?: AbortSignal } = {}) {
  const session = run(name, { stdin: 'pipe', ...extra });
  session.resize(rows, cols);
  const stdout = new Recorder(session.stdout);
  await stdout.waitFor('# ');
  return { session, stdout };
}

test('a: tty=false, stdout and stderr apart, exit code 3, stdin closed at once', async () => {
  const c = recorded('a_notty_out_err_exit3');
  const session = run('a_notty_out_err_exit3');
  const [stdout, stderr, code] = await Promise.all([collect(session.stdout), collect(session.stderr), session.exitCode]);
  expect(stdout.toString()).toBe(c.decoded_stdout);
  expect(stderr.toString()).toBe(c.decoded_stderr);
  expect(code).toBe(c.exit_code);
  expect(session.actor.getSnapshot().value).toBe('exited');
});

test('a2: with tty=false nothing final arrives before stdin is closed, even after the process exited', async () => {
  const c = recorded('a2_notty_without_stdin_close');
  const session = run('a2_notty_without_stdin_close', { stdin: 'pipe' });
  await Promise.all([
    new Recorder(session.stdout).waitFor(c.decoded_stdout),
    new Recorder(session.stderr).waitFor(c.decoded_stderr),
  ]);
  await h.fake.idle();
  await settle(50);
  expect(session.actor.getSnapshot().value).toEqual({ running: { phase: 'open', deadline: 'unbounded' } });
  session.stdin.end();
  await expect(session.exitCode).resolves.toBe(c.exit_code);
});

test('b: tty=true merges stderr into stdout with CRLF and sends no stderr close', async () => {
  const c = recorded('b_tty_out_err_exit3');
  const session = run('b_tty_out_err_exit3');
  const [stdout, stderr, code] = await Promise.all([collect(session.stdout), collect(session.stderr), session.exitCode]);
  expect(stdout.toString()).toBe(c.decoded_stdout);
  expect(stderr.toString()).toBe('');
  expect(code).toBe(c.exit_code);
});

test('c: stdin from a Readable reaches cat; its end closes stdin; exit code 0 from an exited frame without exit_code', async () => {
  const c = recorded('c_notty_cat_stdin');
  const session = run('c_notty_cat_stdin', { stdin: Readable.from([Buffer.from('hello\n')]) });
  const [stdout, code] = await Promise.all([collect(session.stdout), session.exitCode]);
  expect(stdout.toString()).toBe(c.decoded_stdout);
  expect(code).toBe(0);
});

test('d: an interactive tty shell: prompt, typed input echoed, exit 5', async () => {
  const c = recorded('d_tty_shell_interactive');
  const { session, stdout } = await shellAtPrompt('d_tty_shell_interactive', 24, 80);
  session.stdin.write('echo $((6*7))\n');
  await stdout.waitFor('42\r\n# ');
  session.stdin.write('exit 5\n');
  await expect(session.exitCode).resolves.toBe(c.exit_code);
  await stdout.ended;
  expect(stdout.text).toBe(c.decoded_stdout);
});

test.each([
  ['e_command_not_found', ExecCommandStartError],
  ['f_unknown_task', ExecTaskNotFoundError],
  ['g_unknown_alloc', ExecAllocationNotFoundError],
] as const)('%s: the close frame becomes a typed error carrying Nomad’s reason', async (name, ErrorType) => {
  const c = recorded(name);
  const session = run(name);
  const error: unknown = await session.exitCode.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ErrorType);
  expect(error).toMatchObject({ closeCode: c.close.code, reason: c.close.reason });
  expect(session.actor.getSnapshot().value).toBe('failed');
  expect((await collect(session.stdout)).length).toBe(0);
});

test('h: 1,000,000 bytes of output arrive whole', async () => {
  const session = run('h_1mb_output');
  const [stdout, code] = await Promise.all([collect(session.stdout), session.exitCode]);
  expect(stdout.length).toBe(1_000_000);
  expect(stdout.every((byte) => byte === 0x61)).toBe(true);
  expect(code).toBe(0);
});

test('i: heartbeats every 10 s on the clock keep the session and do not disturb it', async () => {
  const session = run('i_client_heartbeat', { stdin: 'pipe' });
  await opened(session);
  h.clock.advance(EXEC_HEARTBEAT_MS * 3);
  await settle(20);
  expect(session.actor.getSnapshot().status).toBe('active');
  session.stdin.end();
  const [stdout, code] = await Promise.all([collect(session.stdout), session.exitCode]);
  expect(stdout.length).toBe(0);
  expect(code).toBe(0);
});

test('j1: with a tty, closing stdin is not EOF; cancelling ends the session and the shell', async () => {
  const controller = new AbortController();
  const { session, stdout } = await shellAtPrompt('j1_tty_stdin_close_is_not_eof', 40, 120, { signal: controller.signal });
  session.stdin.write('stty size\n');
  await stdout.waitFor('40 120\r\n# ');
  session.stdin.end();
  await settle(50);
  expect(session.actor.getSnapshot().value).toMatchObject({ running: { phase: 'open' } });
  expect(h.fake.running.size).toBe(1);
  controller.abort();
  await expect(session.exitCode).rejects.toBeInstanceOf(ExecAbortedError);
  expect(session.actor.getSnapshot().value).toBe('cancelled');
  await h.fake.idle();
  await stdout.ended;
  expect(stdout.text).toBe(recorded('j1_tty_stdin_close_is_not_eof').decoded_stdout);
});

test('j2: Ctrl-D ends a tty shell with exit code 0', async () => {
  const c = recorded('j2_tty_ctrl_d');
  const { session, stdout } = await shellAtPrompt('j2_tty_ctrl_d', 24, 80);
  session.stdin.write('\u0004');
  await expect(session.exitCode).resolves.toBe(0);
  await stdout.ended;
  expect(stdout.text).toBe(c.decoded_stdout);
});
