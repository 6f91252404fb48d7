/**
 * The execution options: privileged or through a setuser-style wrapper, NOMAD_* removed, stderr apart
 * under a tty through a fifo. Examples run end to end through the fake; the property runs 1,000
 * argument vectors through the generated shell text on real /bin/sh directly (the same argv the fake
 * would spawn) and a sample of 40 end to end through the fake exec endpoint.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fc } from '@fast-check/jest';
import { runCommand, type RunCommandOptions } from '../../src/exec/runCommand.js';
import { ShellQuoteError, shellJoin, shellQuote } from '../../src/exec/shellQuote.js';
import { stderrReaderCommand, wrapCommand, type ExecutionOptions } from '../../src/exec/executionOptions.js';
import { asRoot } from '../testing/helpers.js';
import { collect, opened, startHarness, type Harness } from './harness.js';

/** setpriv drops to nobody the way /sbin/setuser drops to `user` in Poseidon's images. */
const SETUSER = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

function run(options: Omit<RunCommandOptions, 'task'>) {
  const session = runCommand(h.client, h.allocId, { task: 'main', setuser: SETUSER, ...options });
  return Promise.all([collect(session.stdout), collect(session.stderr), session.exitCode]).then(([stdout, stderr, exitCode]) => ({
    stdout: stdout.toString(),
    stderr: stderr.toString(),
    exitCode,
  }));
}

const fifos = () => readdirSync('/tmp').filter((name) => name.startsWith('warden-stderr-'));

describe('shellQuote', () => {
  test('leaves plain words alone and quotes everything else', () => {
    expect(shellJoin(['ls', '-la', '/tmp/a.b'])).toBe('ls -la /tmp/a.b');
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
    expect(shellQuote('')).toBe(`''`);
    expect(shellQuote('A=b')).toBe(`'A=b'`);
  });
  test('refuses a NUL byte, which no argv can carry', () => {
    expect(() => shellQuote('a\0b')).toThrow(ShellQuoteError);
  });
});

describe('through the fake exec endpoint', () => {
  test('privileged runs as the allocation user, unprivileged through the setuser wrapper', async () => {
    await expect(run({ command: ['id', '-u'], privileged: true })).resolves.toMatchObject({ stdout: '0\n', exitCode: 0 });
    await expect(run({ command: ['id', '-u'], privileged: false })).resolves.toMatchObject({ stdout: '65534\n', exitCode: 0 });
  });

  test('NOMAD_* variables are removed unless asked to keep them; others stay', async () => {
    const probe = ['/bin/sh', '-c', 'env | grep -c "^NOMAD_"; echo "$PATH" | grep -c bin'];
    await expect(run({ command: probe })).resolves.toMatchObject({ stdout: '0\n1\n', exitCode: 0 });
    const kept = await run({ command: probe, removeNomadEnvironment: false });
    expect(Number(kept.stdout.split('\n')[0])).toBeGreaterThanOrEqual(4);
  });

  test.each([true, false])('tty with separate stderr (privileged %s): stderr apart, nothing lost, fifo removed', async (privileged) => {
    const before = fifos();
    const script = 'i=0; while [ $i -lt 200 ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done; exit 7';
    const result = await run({ command: ['/bin/sh', '-c', script], tty: true, separateStderr: true, privileged });
    const lines = (prefix: string) => Array.from({ length: 200 }, (_, i) => `${prefix} ${i}`);
    expect(result.exitCode).toBe(7);
    expect(result.stdout).toBe(lines('out').join('\r\n') + '\r\n');
    expect(result.stderr).toBe(lines('err').join('\n') + '\n');
    expect(fifos()).toEqual(before);
  });

  test('keptEnvironment: the command starts from those of the task\'s variables that are set, and its own', async () => {
    const result = await run({ command: ['env', 'MINE=1', '/bin/sh', '-c', 'env | sort'], keptEnvironment: ['PATH', 'TZ'] });
    expect(result.stdout.split('\n').filter(Boolean).map((line) => line.split('=')[0])).toEqual(['MINE', 'PATH', 'PWD']);
  });

  test('a working directory that cannot be entered: said on stderr, even with the fifo, and the session ends', async () => {
    const result = await run({ command: ['true'], workingDirectory: '/nonexistent/dir', tty: true, separateStderr: true });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('/nonexistent/dir');
  });

  asRoot('unprivileged: set up as the task user, only the command dropped to the wrapper\'s user', async () => {
    // A working directory nobody can reach by its path (a Nomad client's 0700 data dir), and the fifo.
    const root = mkdtempSync(join(tmpdir(), 'warden-closed-'));
    const work = join(root, 'task', 'local');
    mkdirSync(work, { recursive: true });
    chmodSync(join(root, 'task'), 0o777);
    chmodSync(work, 0o777);
    try {
      const script = 'id -u; touch made && ls made; stat -L -c "%U %a" /proc/self/fd/2 >&2';
      const result = await run({ command: ['/bin/sh', '-c', script], workingDirectory: work, privileged: false, tty: true, separateStderr: true });
      expect(result).toMatchObject({ stdout: '65534\r\nmade\r\n', stderr: 'root 600\n', exitCode: 0 });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test('a megabyte of stderr through the fifo arrives whole while stdout stays on the terminal', async () => {
    const script = "head -c 1000000 /dev/zero | tr '\\0' e >&2; echo done";
    const result = await run({ command: ['/bin/sh', '-c', script], tty: true, separateStderr: true, privileged: false });
    expect(result).toEqual({ stdout: 'done\r\n', stderr: 'e'.repeat(1_000_000), exitCode: 0 });
  });

  test('a cancelled split session leaves neither process nor fifo behind', async () => {
    const before = fifos();
    const controller = new AbortController();
    const session = runCommand(h.client, h.allocId, {
      task: 'main',
      command: ['sleep', '1000'],
      tty: true,
      separateStderr: true,
      signal: controller.signal,
    });
    await opened(session);
    controller.abort();
    await expect(session.exitCode).rejects.toMatchObject({ name: 'ExecAbortedError' });
    await h.fake.idle();
    expect(fifos()).toEqual(before);
  });
});

// Arguments a shell could get wrong: quotes, $, backslashes, newlines, globs, non-ASCII, anything.
const hostile = fc.string({
  unit: fc.constantFrom("'", '"', '$', '\\', '\n', '`', ' ', '\t', '*', '?', '~', '=', '!', ';', '&', '|', '(', '{', '#', '-', 'a', 'é', '😀', '\u2028'),
});
const anyText = fc.string({ unit: 'binary' }).filter((s) => !s.includes('\0') && Buffer.from(s).toString() === s);
const argvArb = fc.array(fc.oneof(hostile, anyText), { maxLength: 6 });
const optionsArb = fc.record({
  privileged: fc.boolean(),
  removeNomadEnvironment: fc.boolean(),
  separateStderr: fc.boolean(),
  keptEnvironment: fc.constantFrom(undefined, ['PATH'], ['PATH', 'HOME', 'TERM']),
});

/** A probe that prints its arguments NUL-terminated, to stdout or (for the fifo case) stderr. */
function probe(args: readonly string[], toStderr: boolean): string[] {
  return ['/bin/sh', '-c', `for a; do printf '%s\\0' "$a"; done${toStderr ? ' >&2' : ''}`, 'probe', ...args];
}
const expected = (args: readonly string[]) => args.map((arg) => `${arg}\0`).join('');

function spawnOutput(argv: readonly string[]): Promise<string> {
  const [file, ...rest] = argv;
  const child = spawn(file ?? '', rest, { env: { PATH: process.env.PATH ?? '', NOMAD_TASK_NAME: 'main' }, stdio: ['ignore', 'pipe', 'inherit'] });
  return collect(child.stdout).then((out) => out.toString());
}

test('property: any argument vector survives every wrapper exactly, on real /bin/sh (1,000 runs)', async () => {
  await fc.assert(
    fc.asyncProperty(argvArb, optionsArb, async (args, { separateStderr, keptEnvironment, ...rest }) => {
      const options: ExecutionOptions = { ...rest, ...(keptEnvironment ? { keptEnvironment } : {}), setuser: SETUSER, fifoDirectory: '/tmp' };
      if (!separateStderr) {
        expect(await spawnOutput(wrapCommand(probe(args, false), options))).toBe(expected(args));
        return;
      }
      const fifo = `/tmp/warden-stderr-prop-${process.pid}.fifo`;
      const stderr = spawnOutput(stderrReaderCommand(fifo));
      await spawnOutput(wrapCommand(probe(args, true), options, fifo));
      expect(await stderr).toBe(expected(args));
      expect(existsSync(fifo)).toBe(false);
    }),
    { numRuns: 1000 },
  );
  // Two or three real processes a run: 60 s on a quiet 2-core machine, 146 s beside other suites under load.
}, 360_000);

test('property sample: argument vectors survive through the fake exec endpoint (40 runs, tty and not)', async () => {
  await fc.assert(
    fc.asyncProperty(argvArb, optionsArb, fc.boolean(), async (args, { keptEnvironment, ...options }, tty) => {
      const split = tty && options.separateStderr;
      const result = await run({ ...options, ...(keptEnvironment ? { keptEnvironment } : {}), tty, command: probe(args, split) });
      expect(result.exitCode).toBe(0);
      expect(split ? result.stderr : result.stdout).toBe(tty && !split ? expected(args).replaceAll('\n', '\r\n') : expected(args));
    }),
    { numRuns: 40 },
  );
}, 60_000);
