/** `warden exec` against the fake: allocation prefix lookup, piped stdin, -t, the remote exit code as its own. */
import { PassThrough, Readable } from 'node:stream';
import { execInAllocation, type ExecIo } from '../../src/cli/execCommand.js';
import { collect, index, startHarness, type Harness } from './harness.js';

const OTHER = 'a6a5c5a8-0000-4000-8000-000000000000';
const stub = (id: string, tasks: string[]) => ({
  ID: id,
  JobID: 'exec-target',
  TaskGroup: 'app',
  ClientStatus: 'running',
  TaskStates: Object.fromEntries(tasks.map((task) => [task, { State: 'running' }])),
});

let h: Harness;
beforeAll(async () => {
  const allocations = [stub(index.alloc_id, ['main']), stub(OTHER, ['main', 'sidecar'])];
  h = await startHarness([index.alloc_id, OTHER], (request, response) => {
    const url = new URL(request.url ?? '/', 'http://x');
    if (url.pathname !== '/v1/allocations') return void response.writeHead(404).end();
    const prefix = url.searchParams.get('prefix') ?? '';
    response.writeHead(200, { 'Content-Type': 'application/json', 'X-Nomad-Index': '1' });
    response.end(JSON.stringify(allocations.filter((a) => a.ID.startsWith(prefix))));
  });
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
  const result = await finish(execInAllocation(index.alloc_id.slice(0, 13), ['/bin/sh', '-c', 'echo out; echo err >&2; exit 3'], {}, streams), streams);
  expect(result).toEqual({ code: 3, stdout: 'out\n', stderr: 'err\n' });
});

test('stdin is piped and its end is EOF for the command', async () => {
  const streams = io(Readable.from([Buffer.from('hello\n')]));
  await expect(finish(execInAllocation(index.alloc_id, ['cat'], {}, streams), streams)).resolves.toEqual({ code: 0, stdout: 'hello\n', stderr: '' });
});

test('an ambiguous prefix, an unknown one and a missing task are errors with exit code 1', async () => {
  const ambiguous = io();
  const a = await finish(execInAllocation('a6a5', ['true'], {}, ambiguous), ambiguous);
  expect(a.code).toBe(1);
  expect(a.stderr).toContain('matched multiple allocations');
  expect(a.stderr).toContain(OTHER);
  const unknown = io();
  expect((await finish(execInAllocation('ffff', ['true'], {}, unknown), unknown)).stderr).toContain('No allocation(s) with prefix');
  const noTask = io();
  expect((await finish(execInAllocation(OTHER, ['true'], {}, noTask), noTask)).stderr).toContain('--task');
  const taskGiven = io();
  expect((await finish(execInAllocation(OTHER, ['true'], { task: 'main' }, taskGiven), taskGiven)).code).toBe(0);
});

test('-t puts a terminal stdin in raw mode for the session and sends the terminal size', async () => {
  const stdin = Object.assign(new PassThrough(), { isTTY: true, modes: [] as boolean[], setRawMode(raw: boolean) { this.modes.push(raw); } });
  const streams = io(stdin);
  Object.assign(streams.stdout, { rows: 40, columns: 120 });
  // The size goes out before any input, so once the line arrives the terminal has it.
  const run = execInAllocation(index.alloc_id, ['/bin/sh', '-c', 'read line; stty size'], { tty: true }, streams);
  stdin.end('go\n');
  const result = await finish(run, streams);
  expect(result).toEqual({ code: 0, stdout: 'go\r\n40 120\r\n', stderr: '' });
  expect(stdin.modes).toEqual([true, false]);
});
