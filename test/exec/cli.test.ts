/** `warden exec` against the fake: allocation prefix lookup, piped stdin, -t, the remote exit code as its own. */
import { PassThrough, Readable } from 'node:stream';
import { WebSocketServer } from 'ws';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { execInAllocation, type ExecIo } from '../../src/cli/execCommand.js';
import { EXEC_TARGET_JOB, collect, startHarness, type Harness } from './harness.js';

let h: Harness;
/** Two allocations whose ids share a prefix, and one with two tasks. */
let shared: string;
let twoTasks: string;
beforeAll(async () => {
  h = await startHarness();
  const many = { ...EXEC_TARGET_JOB, ID: 'many', Name: 'many', TaskGroups: [{ ...EXEC_TARGET_JOB.TaskGroups[0], Count: 40 }] };
  h.nomad.cluster.registerJob(many);
  const ids = h.nomad.cluster.placeAllocations('many').map((allocation) => String(allocation.ID)).sort();
  shared = ids.map((id, i) => (id.slice(0, 2) === ids[i + 1]?.slice(0, 2) ? id.slice(0, 2) : '')).find((prefix) => prefix !== '') ?? '';
  const group = EXEC_TARGET_JOB.TaskGroups[0];
  const sidecar = { ...EXEC_TARGET_JOB, ID: 'pair', Name: 'pair', TaskGroups: [{ ...group, Tasks: [...(group?.Tasks ?? []), { ...group?.Tasks[0], Name: 'sidecar' }] }] };
  h.nomad.cluster.registerJob(sidecar);
  twoTasks = String(h.nomad.cluster.placeAllocations('pair')[0]?.ID);
  h.nomad.cluster.startTask(twoTasks);
});
afterAll(async () => {
  await h.close();
});

function io(stdin: Readable = Readable.from([])): ExecIo & { out: Promise<Buffer>; err: Promise<Buffer> } {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  return { env: { NOMAD_ADDR: h.address }, stdin, stdout, stderr, clock: h.clock, out: collect(stdout), err: collect(stderr) };
}

async function finish(run: Promise<number>, streams: ReturnType<typeof io>) {
  const code = await run;
  streams.stdout.end();
  streams.stderr.end();
  return { code, stdout: (await streams.out).toString(), stderr: (await streams.err).toString() };
}

test('the remote exit code is its own; stdout and stderr go to their own streams', async () => {
  const streams = io();
  const result = await finish(execInAllocation(h.allocId.slice(0, 13), ['/bin/sh', '-c', 'echo out; echo err >&2; exit 3'], {}, streams), streams);
  expect(result).toEqual({ code: 3, stdout: 'out\n', stderr: 'err\n' });
});

test('stdin is piped and its end is EOF for the command', async () => {
  const streams = io(Readable.from([Buffer.from('hello\n')]));
  await expect(finish(execInAllocation(h.allocId, ['cat'], {}, streams), streams)).resolves.toEqual({ code: 0, stdout: 'hello\n', stderr: '' });
});

test('an ambiguous prefix, an unknown one and a missing task are errors with exit code 1', async () => {
  const ambiguous = io();
  expect(shared).toHaveLength(2);
  const a = await finish(execInAllocation(shared, ['true'], {}, ambiguous), ambiguous);
  expect(a.code).toBe(1);
  expect(a.stderr).toContain(`Prefix "${shared}" matched multiple allocations`);
  const unknown = io();
  expect((await finish(execInAllocation('ffffffff', ['true'], {}, unknown), unknown)).stderr).toContain('No allocation(s) with prefix');
  // A prefix that is no hexadecimal is Nomad's lookup error, as `nomad alloc exec zz` prints it.
  const notHex = io();
  const refused = await finish(execInAllocation('zz', ['true'], {}, notHex), notHex);
  expect([refused.code, refused.stderr]).toEqual([1, expect.stringContaining("500 (alloc lookup failed: index error: Invalid UUID: encoding/hex: invalid byte: U+007A 'z')")]);
  const noTask = io();
  expect((await finish(execInAllocation(twoTasks, ['true'], {}, noTask), noTask)).stderr).toContain('--task');
  const taskGiven = io();
  expect((await finish(execInAllocation(twoTasks, ['true'], { task: 'sidecar' }, taskGiven), taskGiven)).code).toBe(0);
});

test('-t puts a terminal stdin in raw mode for the session and sends the terminal size', async () => {
  const stdin = Object.assign(new PassThrough(), { isTTY: true, modes: [] as boolean[], setRawMode(raw: boolean) { this.modes.push(raw); } });
  const streams = io(stdin);
  Object.assign(streams.stdout, { isTTY: true, rows: 40, columns: 120 });
  // The size goes out before any input, so once the line arrives the terminal has it.
  const run = execInAllocation(h.allocId, ['/bin/sh', '-c', 'read line; stty size'], { tty: true }, streams);
  stdin.end('go\n');
  const result = await finish(run, streams);
  expect(result).toEqual({ code: 0, stdout: 'go\r\n40 120\r\n', stderr: '' });
  expect(stdin.modes).toEqual([true, false]);
});

test('-t with stdin not a terminal is refused as Nomad refuses it, after the lookups: exit 1', async () => {
  const streams = io();
  Object.assign(streams.stdout, { isTTY: true, rows: 24, columns: 80 });
  const result = await finish(execInAllocation(h.allocId, ['true'], { tty: true }, { ...streams, env: { ...streams.env, NO_COLOR: '1' } }), streams);
  expect(result).toEqual({ code: 1, stdout: '', stderr: 'failed to exec into task: not a terminal\n' });
  // The lookups come first, as with Nomad's CLI: an unknown allocation says so instead.
  const unknown = io();
  expect((await finish(execInAllocation('ffffffff', ['true'], { tty: true }, unknown), unknown)).stderr).toContain('No allocation(s) with prefix');
});

test('without -t, a terminal on both sides gets a terminal, as `nomad alloc exec` defaults; --no-tty keeps pipes', async () => {
  const terminal = () => {
    const stdin = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => undefined });
    const streams = io(stdin);
    Object.assign(streams.stdout, { isTTY: true, rows: 24, columns: 80 });
    stdin.end();
    return streams;
  };
  const auto = terminal();
  await expect(finish(execInAllocation(h.allocId, ['/bin/sh', '-c', 'echo out; echo err >&2'], {}, auto), auto)).resolves.toEqual({ code: 0, stdout: 'out\r\nerr\r\n', stderr: '' });
  const piped = terminal();
  await expect(finish(execInAllocation(h.allocId, ['/bin/sh', '-c', 'echo out; echo err >&2'], { tty: false }, piped), piped)).resolves.toEqual({ code: 0, stdout: 'out\n', stderr: 'err\n' });
});

test('the runner options: NOMAD_* kept by default (as Nomad) or removed, the unprivileged wrapper, stderr apart under a tty', async () => {
  const printEnv = ['/bin/sh', '-c', 'env | grep -c ^NOMAD_ || true'];
  const kept = io();
  expect(Number((await finish(execInAllocation(h.allocId, printEnv, {}, kept), kept)).stdout)).toBeGreaterThan(0);
  const removed = io();
  expect((await finish(execInAllocation(h.allocId, printEnv, { removeNomadEnv: true }, removed), removed)).stdout).toBe('0\n');

  const wrapped = io();
  const asUser = await finish(execInAllocation(h.allocId, ['/bin/sh', '-c', 'echo $WARDEN_USER'], { setuser: ['env', 'WARDEN_USER=runner'] }, wrapped), wrapped);
  expect(asUser).toEqual({ code: 0, stdout: 'runner\n', stderr: '' });

  const stdin = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => undefined });
  const apart = io(stdin);
  Object.assign(apart.stdout, { isTTY: true, rows: 24, columns: 80 });
  const result = await finish(execInAllocation(h.allocId, ['/bin/sh', '-c', 'echo out; echo err >&2; exit 4'], { tty: true, separateStderr: true }, apart), apart);
  expect(result).toEqual({ code: 4, stdout: 'out\r\n', stderr: 'err\n' });
});

describe('remote exit codes outside 0-255', () => {
  let scripted: FakeNomad;
  let allocId = '';
  let exitCode = '0';
  beforeAll(async () => {
    scripted = await FakeNomad.start({ clock: h.clock, exec: false });
    scripted.cluster.registerJob(EXEC_TARGET_JOB);
    allocId = String(scripted.cluster.placeAllocations(EXEC_TARGET_JOB.ID)[0]?.ID);
    const wss = new WebSocketServer({ noServer: true });
    scripted.server.on('upgrade', (request, socket, head) =>
      wss.handleUpgrade(request, socket, head, (ws) => ws.on('message', () => ws.send(`{"exited":true,"result":{"exit_code":${exitCode}}}`))),
    );
  });
  afterAll(async () => {
    await scripted.close();
  });

  test.each([
    ['3', 3, ''],
    ['255', 255, ''],
    ['256', 255, "the command's exit code 256 does not fit an exit status (0-255): exiting 255\n"],
    ['512', 255, "the command's exit code 512 does not fit an exit status (0-255): exiting 255\n"],
    ['-1', 255, "the command's exit code -1 does not fit an exit status (0-255): exiting 255\n"],
    ['1e300', 255, "the command's exit code 1e+300 does not fit an exit status (0-255): exiting 255\n"],
  ])('Nomad says %s: exit %i, never success', async (sent, code, stderr) => {
    exitCode = sent;
    const streams = io();
    const result = await finish(execInAllocation(allocId, ['true'], {}, { ...streams, env: { NOMAD_ADDR: scripted.address } }), streams);
    expect(result).toEqual({ code, stdout: '', stderr });
  });
});
