/**
 * The command line's contract, as README's exit-code table states it: errors on stderr (never mixed
 * into the output a script parses), Ctrl-C and SIGTERM with the shell's codes, usage errors apart
 * from "unhealthy", NO_COLOR honoured.
 */
import { gate } from '../../src/cli/gateCommand.js';
import { interruptedExitCode, useColor } from '../../src/cli/commandIo.js';
import { EXIT_USAGE, exitStatusOf, signalExitCode } from '../../src/cli/exitCodes.js';
import { buildProgram, main } from '../../src/cli/main.js';
import { watch } from '../../src/cli/watchCommand.js';
import { VirtualClock } from '../../src/clock/index.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { driveTo } from '../supervisor/support/harness.js';
import { closedPort } from './support/closedPort.js';

function io(env: Record<string, string>, clock = new VirtualClock()) {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { env, write: (line: string) => out.push(line), error: (line: string) => err.push(line), clock, transport: { gzip: false } } };
}

test('gate: "could not be reached" and every error on stderr, in --json too; stdout stays empty', async () => {
  const port = await closedPort();
  for (const json of [false, true]) {
    const { out, err, io: streams } = io({ NOMAD_ADDR: `http://127.0.0.1:${port}` });
    await expect(gate('web', { json }, streams)).resolves.toBe(2);
    expect(out).toEqual([]);
    expect(err).toHaveLength(1);
    expect(err[0]).toContain(json ? '"unreachable":true' : `Nomad at http://127.0.0.1:${port} could not be reached`);
  }
});

test('gate: Ctrl-C exits 130, SIGTERM 143 (not 1, which says unhealthy)', async () => {
  const clock = new VirtualClock();
  const fake = await FakeNomad.start({ clock });
  fake.cluster.registerJob({ ID: 'web', Name: 'web', Type: 'service', Datacenters: ['dc1'], TaskGroups: [{ Name: 'app', Count: 1, Tasks: [{ Name: 'main', Driver: 'raw_exec', Config: {} }] }] });
  try {
    for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
      const stop = new AbortController();
      const { out, io: streams } = io({ NOMAD_ADDR: fake.address }, clock);
      const running = gate('web', {}, { ...streams, signal: stop.signal });
      await driveTo(clock, clock.now() + 1_000);
      stop.abort(signal);
      await expect(running).resolves.toBe(code);
      expect(out).toEqual(['✘ web version 0: interrupted']);
    }
  } finally {
    await fake.close();
  }
});

test('watch: a problem goes to stderr, the state lines to stdout', async () => {
  const clock = new VirtualClock({ start: Date.UTC(2026, 10, 29, 17) });
  const fake = await FakeNomad.start({ clock, token: 'right-token' });
  const { out, err, io: streams } = io({ NOMAD_ADDR: fake.address, NOMAD_TOKEN: 'wrong' }, clock);
  let code: number | undefined;
  void watch({}, streams).then((c) => (code = c));
  for (let i = 0; i < 20 && code === undefined; i++) await driveTo(clock, clock.now() + 1_000);
  await fake.close();
  expect(code).toBe(2);
  expect(err.join('\n')).toContain('problem');
  expect(out.join('\n')).not.toContain('problem');
  expect(out[0]).toContain('[connecting]');
});

test('usage errors exit 64 with the message on stderr; --help and --version exit 0 on stdout', async () => {
  const run = async (...args: string[]) => {
    const written: string[] = [];
    const out = jest.spyOn(process.stdout, 'write').mockImplementation((text) => written.push(`out:${String(text)}`) > 0);
    const err = jest.spyOn(process.stderr, 'write').mockImplementation((text) => written.push(`err:${String(text)}`) > 0);
    try {
      const argv = ['node', 'warden', ...args];
      return { code: await main(argv, buildProgram('9.9.9')), written: written.join('') };
    } finally {
      out.mockRestore();
      err.mockRestore();
    }
  };
  await expect(run('--version')).resolves.toEqual({ code: 0, written: 'out:9.9.9\n' });
  expect(await run('--help')).toMatchObject({ code: 0, written: expect.stringMatching(/^out:Usage: warden/) });
  for (const args of [['bogus'], ['gate'], ['gate', 'web', '--timeout', 'soon'], ['watch', '--inspect', '70000'], ['exec', 'abc']]) {
    const { code, written } = await run(...args);
    expect({ args, code }).toEqual({ args, code: EXIT_USAGE });
    expect(written).toMatch(/^err:error: /);
  }
});

test('exit codes: a signal as the shell reports it; a remote code outside 0-255 never reads as success', () => {
  expect([signalExitCode('SIGINT'), signalExitCode('SIGTERM'), signalExitCode('SIGPIPE')]).toEqual([130, 143, 141]);
  expect(interruptedExitCode(undefined)).toBe(130);
  expect([0, 1, 3, 255].map(exitStatusOf)).toEqual([0, 1, 3, 255]);
  // 256 and 512 would be exit status 0 by truncation; 1e300 crashed process.exitCode.
  expect([256, 512, -1, 1e300, 2 ** 31].map(exitStatusOf)).toEqual([255, 255, 255, 255, 255]);
});

test('colour only on a terminal, and never with NO_COLOR set', () => {
  expect(useColor({ isTTY: true }, {})).toBe(true);
  expect(useColor({ isTTY: true }, { NO_COLOR: '' })).toBe(true);
  expect(useColor({ isTTY: true }, { NO_COLOR: '1' })).toBe(false);
  expect(useColor({ isTTY: false }, {})).toBe(false);
  expect(useColor({}, {})).toBe(false);
});
