/** `warden exec` against the fake: allocation prefix lookup, piped stdin, -t, the remote exit code as its own. */
import { PassThrough, Readable } from 'node:stream';
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
  expect((await finish(execInAllocation('zz', ['true'], {}, unknown), unknown)).stderr).toContain('No allocation(s) with prefix');
  const noTask = io();
  expect((await finish(execInAllocation(twoTasks, ['true'], {}, noTask), noTask)).stderr).toContain('--task');
  const taskGiven = io();
  expect((await finish(execInAllocation(twoTasks, ['true'], { task: 'sidecar' }, taskGiven), taskGiven)).code).toBe(0);
});

test('-t puts a terminal stdin in raw mode for the session and sends the terminal size', async () => {
  const stdin = Object.assign(new PassThrough(), { isTTY: true, modes: [] as boolean[], setRawMode(raw: boolean) { this.modes.push(raw); } });
  const streams = io(stdin);
  Object.assign(streams.stdout, { rows: 40, columns: 120 });
  // The size goes out before any input, so once the line arrives the terminal has it.
  const run = execInAllocation(h.allocId, ['/bin/sh', '-c', 'read line; stty size'], { tty: true }, streams);
  stdin.end('go\n');
  const result = await finish(run, streams);
  expect(result).toEqual({ code: 0, stdout: 'go\r\n40 120\r\n', stderr: '' });
  expect(stdin.modes).toEqual([true, false]);
});
