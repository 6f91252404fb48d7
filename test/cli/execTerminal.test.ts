/**
 * The installed `warden exec` (test/cli/support/packedWarden.ts) as a user runs it: its own process,
 * under a real pseudo-terminal (node-pty plays the user's terminal) or on plain pipes, against
 * FakeNomad's exec endpoint. What the terminal shows must be what `nomad alloc exec` shows, byte for
 * byte: the recorded Nomad 1.1.2 output (test/fixtures/nomad-1.1.2/exec), its refusal of -t without a
 * terminal, a terminal of 0×0, and no crash when the remote end closes while input still flows. The
 * cases that once failed in some runs only are run ten times.
 */
import { spawn } from 'node:child_process';
import * as pty from 'node-pty';
import { index, startHarness, type Harness } from '../exec/harness.js';
import { packedWarden, type PackedWarden } from './support/packedWarden.js';

const RUNS = 10;

let warden: PackedWarden;
let h: Harness;
beforeAll(async () => {
  [warden, h] = await Promise.all([packedWarden(), startHarness()]);
}, 300_000);
afterAll(async () => {
  await h?.close();
});

function environment(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !/^(NO_COLOR|NOMAD_.*)$/.test(name)) env[name] = value;
  return { ...env, NOMAD_ADDR: h.address, ...extra };
}

interface Shown {
  /** Every byte the terminal received, as latin1 text. */
  screen: string;
  exitCode: number;
}

/**
 * Runs `file args` as the session leader of a new terminal of `rows`×`cols`; `type` may answer what
 * the screen shows. Resolves once the process has exited and the terminal has given all its output.
 */
function inTerminal(file: string, args: string[], options: { rows?: number; cols?: number; env?: Record<string, string>; type?: (screen: string, write: (text: string) => void) => void } = {}): Promise<Shown> {
  const terminal = pty.spawn(file, args, { rows: options.rows ?? 24, cols: options.cols ?? 80, env: options.env ?? environment(), encoding: null });
  let screen = '';
  terminal.onData((data) => {
    // With `encoding: null` node-pty hands out Buffers; its typings say string.
    screen += Buffer.from(data as unknown as Buffer).toString('latin1');
    options.type?.(screen, (text) => terminal.write(text));
  });
  return new Promise((resolve) => terminal.onExit(({ exitCode }) => resolve({ screen, exitCode })));
}

interface Piped {
  stdout: string;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Runs the bin on pipes; `drive` may feed stdin or stop reading stdout. */
function onPipes(args: string[], drive: (child: ReturnType<typeof spawn>) => void = (child) => child.stdin?.end()): Promise<Piped> {
  const child = spawn(warden.bin, args, { env: environment(), stdio: 'pipe' });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.on('error', () => undefined);
  drive(child);
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ stdout, stderr, code, signal })));
}

const recorded = (name: string) => index.cases[name]!;

describe('with a terminal', () => {
  test(`-t shows Nomad's bytes: no leading NUL, no doubled CR (case b), ${RUNS} times`, async () => {
    const b = recorded('b_tty_out_err_exit3');
    for (let run = 0; run < RUNS; run++) {
      const shown = await inTerminal(warden.bin, ['exec', '-t', h.allocId, '--', ...b.query.command]);
      expect({ run, ...shown }).toEqual({ run, screen: b.decoded_stdout, exitCode: b.exit_code });
    }
  });

  test('an interactive shell shows what Nomad sent (case d): the remote echo only, CRLF once', async () => {
    const d = recorded('d_tty_shell_interactive');
    const typed: string[] = [];
    const shown = await inTerminal(warden.bin, ['exec', h.allocId, '--', 'env', 'PS1=# ', '/bin/sh'], {
      // Typed only once the prompt is there, as a person would; -t is on by default in a terminal.
      type: (screen, write) => {
        const prompts = screen.split('# ').length - 1;
        if (prompts === 1 && typed.length === 0) write((typed[0] = 'echo $((6*7))\n'));
        if (prompts === 2 && typed.length === 1) write((typed[1] = 'exit 5\n'));
      },
    });
    expect(shown).toEqual({ screen: d.decoded_stdout, exitCode: d.exit_code });
  });

  test(`-t stty size: the size sent, and never an uncaught EPIPE when the remote end closes, ${RUNS} times`, async () => {
    for (let run = 0; run < RUNS; run++) {
      // Nomad starts the command before the size arrives, so `stty size` alone would race it: wait for it.
      const waitForSize = 'until [ "$(stty size)" = "40 120" ]; do sleep 0.01; done; stty size';
      const shown = await inTerminal(warden.bin, ['exec', '-t', h.allocId, '--', '/bin/sh', '-c', waitForSize], { rows: 40, cols: 120 });
      expect({ run, ...shown }).toEqual({ run, screen: '40 120\r\n', exitCode: 0 });
    }
  });

  test('a terminal reporting 0×0 works (the size goes as is, as Nomad sends it)', async () => {
    const shown = await inTerminal(warden.bin, ['exec', '-t', h.allocId, '--', '/bin/sh', '-c', 'echo ok'], { rows: 0, cols: 0 });
    expect(shown).toEqual({ screen: 'ok\r\n', exitCode: 0 });
  });

  test('-t with stdin not a terminal is refused as Nomad refuses it: red on a terminal, exit 1', async () => {
    const redirected = ['-c', 'exec "$0" "$@" </dev/null', warden.bin, 'exec', '-t', h.allocId, '--', 'true'];
    // Nomad's ColoredUi error; the newline becomes CRLF on the way through our cooked terminal, as Nomad's does.
    await expect(inTerminal('/bin/sh', redirected)).resolves.toEqual({ screen: '\u001b[0;31mfailed to exec into task: not a terminal\u001b[0m\r\n', exitCode: 1 });
    await expect(inTerminal('/bin/sh', redirected, { env: environment({ NO_COLOR: '1' }) })).resolves.toEqual({ screen: 'failed to exec into task: not a terminal\r\n', exitCode: 1 });
  });

  test('without -t, Ctrl-C interrupts warden (exit 130), and the remote command is hung up', async () => {
    let sent = false;
    const shown = await inTerminal(warden.bin, ['exec', '--no-tty', h.allocId, '--', '/bin/sh', '-c', 'echo started; exec sleep 600'], {
      type: (screen, write) => {
        if (sent || !screen.includes('started')) return;
        sent = true;
        write('\u0003');
      },
    });
    expect(shown.exitCode).toBe(130);
    expect(shown.screen).toBe('started\r\n^C');
    await h.fake.idle();
  });
});

describe('on pipes', () => {
  test('-t without a terminal: the refusal on stderr, exit 1, nothing on stdout', async () => {
    await expect(onPipes(['exec', '-t', h.allocId, '--', 'true'])).resolves.toEqual({ stdout: '', stderr: 'failed to exec into task: not a terminal\n', code: 1, signal: null });
  });

  test(`4 MB of stdin still flowing when the command exits: its exit code, no EPIPE, ${RUNS} times`, async () => {
    for (let run = 0; run < RUNS; run++) {
      const result = await onPipes(['exec', h.allocId, '--', 'head', '-c', '3'], (child) => {
        const chunk = Buffer.alloc(64 * 1024, 0x61);
        let left = 64;
        const more = (): void => {
          while (left > 0 && child.stdin!.writable) {
            left--;
            if (!child.stdin!.write(chunk)) return void child.stdin!.once('drain', more);
          }
          child.stdin!.end();
        };
        more();
      });
      expect({ run, ...result }).toEqual({ run, stdout: 'aaa', stderr: '', code: 0, signal: null });
    }
  });

  test('stdout closed under it (`| head`): the session ends and warden exits 141, as SIGPIPE would, quietly', async () => {
    const result = await onPipes(['exec', h.allocId, '--', 'seq', '1', '10000000'], (child) => {
      child.stdin?.end();
      child.stdout?.once('data', () => child.stdout?.destroy());
    });
    expect(result).toMatchObject({ stderr: '', code: 141 });
    await h.fake.idle();
  });

  test('Nomad unreachable: exit 2, like gate; a usage error: 64', async () => {
    const unreachable = await new Promise<Piped>((resolve) => {
      const child = spawn(warden.bin, ['exec', 'abcd', '--', 'true'], { env: { ...environment(), NOMAD_ADDR: 'http://127.0.0.1:1' } });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('close', (code, signal) => resolve({ stdout: '', stderr, code, signal }));
    });
    expect(unreachable.code).toBe(2);
    expect(unreachable.stderr).toMatch(/^Error querying allocation: .*ECONNREFUSED/);
    const usage = await onPipes(['exec', h.allocId]);
    expect(usage.code).toBe(64);
    expect(usage.stderr).toContain("error: missing required argument 'command'");
  });
});
