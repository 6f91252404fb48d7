/**
 * The driver `warden serve` gives runners when none is named: the first of docker (Poseidon's),
 * raw_exec (enabled only on purpose), exec healthy on a ready node, printed with why; on raw_exec a
 * warning that it isolates nothing; and `serve --help` stating what each driver isolates.
 */
import { createCliLogger } from '../../src/cli/logging.js';
import { main } from '../../src/cli/main.js';
import { serve } from '../../src/cli/serveCommand.js';
import { VirtualClock, settle } from '../../src/clock/index.js';
import { preferredDriver } from '../../src/runners/drivers.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { START } from './support/serveHarness.js';

/** serve against a FakeNomad whose node has these drivers, until it prints its address: what it printed and logged. */
async function started(drivers: readonly string[] | undefined): Promise<{ lines: string[]; logs: string[] }> {
  const clock = new VirtualClock({ start: START });
  const fake = await FakeNomad.start({ clock, ...(drivers === undefined ? {} : { drivers }) });
  const lines: string[] = [];
  const logs: string[] = [];
  const stop = new AbortController();
  const running = serve({ listen: { host: '127.0.0.1', port: 0 } }, {
    env: { NOMAD_ADDR: fake.address },
    write: (line) => lines.push(line),
    error: (line) => lines.push(line),
    clock,
    transport: { gzip: false },
    signal: stop.signal,
    logger: createCliLogger({ format: 'json', level: 'info', clock, write: (line) => logs.push(line) }),
  });
  try {
    for (let i = 0; i < 2_000 && !lines.some((line) => line.startsWith('Try it')); i++) {
      await settle(5);
      clock.advance(50);
    }
  } finally {
    stop.abort();
    for (let i = 0; i < 200; i++) {
      await settle(5);
      clock.advance(250);
    }
    expect(await running).toBe(0);
    await fake.close();
  }
  return { lines, logs };
}

const driverLine = (lines: readonly string[]): string | undefined => lines.find((line) => line.includes("runners' driver"));

test.each([
  [['docker', 'exec', 'raw_exec'], 'docker'],
  [undefined, 'raw_exec'],
  [['exec'], 'exec'],
])('nodes with %j: %s, and why', async (drivers, expected) => {
  const { lines } = await started(drivers);
  expect(driverLine(lines)).toContain(`runners' driver: ${expected} (the first of docker, raw_exec, exec healthy on the cluster's 1 node(s); --driver to choose)`);
  expect(lines.some((line) => line.includes(`isolation (${expected}): `))).toBe(true);
});

test("no node with any of them: docker, Poseidon's, saying so", async () => {
  const { lines } = await started([]);
  expect(driverLine(lines)).toContain("runners' driver: docker (none of docker, raw_exec, exec is healthy on the cluster's 1 node(s): docker, Poseidon's; --driver to choose)");
});

test('raw_exec: a warning at the start that it isolates nothing', async () => {
  const { logs } = await started(['raw_exec']);
  const warning = logs.map((line) => JSON.parse(line) as { level: string | number; msg: string }).find((record) => record.msg.startsWith('runners run on raw_exec'));
  expect(warning?.msg).toMatch(/^runners run on raw_exec: none: runners share the host's filesystem, processes and network .*; use --driver exec or docker to isolate untrusted code$/);
});

test('preferredDriver reads only ready, eligible nodes, and healthy drivers', () => {
  const node = (drivers: Record<string, boolean>, status = 'ready', eligibility = 'eligible') => ({
    Status: status,
    SchedulingEligibility: eligibility,
    Drivers: Object.fromEntries(Object.entries(drivers).map(([name, healthy]) => [name, { Detected: healthy, Healthy: healthy }])),
  });
  expect(preferredDriver([node({ docker: true }, 'down'), node({ exec: true })])).toBe('exec');
  expect(preferredDriver([node({ docker: true }, 'ready', 'ineligible'), node({ raw_exec: true, exec: true })])).toBe('raw_exec');
  expect(preferredDriver([node({ docker: false, raw_exec: false })])).toBeUndefined();
  expect(preferredDriver([{ Status: 'ready', Drivers: null }])).toBeUndefined();
});

test('serve --help states the isolation of each driver', async () => {
  const written: string[] = [];
  const stdout = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => Boolean(written.push(String(chunk))));
  try {
    await main(['node', 'warden', 'serve', '--help']);
  } finally {
    stdout.mockRestore();
  }
  const help = written.join('');
  expect(help).toContain('Isolation of the runners, by driver');
  for (const driver of ['docker', 'exec', 'raw_exec']) expect(help).toMatch(new RegExp(`\\n  ${driver}: `));
  expect(help).toContain("tasks inherit the Nomad agent's environment");
});
