/** The inspector wired into `warden watch --inspect` and `warden demo`, on a VirtualClock. */
import { runDemo } from '../../src/cli/demoCommand.js';
import { watch } from '../../src/cli/watchCommand.js';
import { VirtualClock } from '../../src/clock/index.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import type { InspectorSnapshot } from '../../src/inspect/index.js';
import { driveTo, flush, loadScenario, requestedIndex, SCENARIOS, stripNomadVerdict } from '../supervisor/support/harness.js';
import { fetchSnapshot, get, until } from './support.js';


test('warden watch --inspect serves the allocations it judges, never the token, and stops the server with the command', async () => {
  const token = 'watch-token-5b1c2f9e';
  const scenario = loadScenario('failed_task');
  const clock = new VirtualClock({ start: scenario.opened });
  const fake = await FakeNomad.start({ clock, token });
  const lines: string[] = [];
  const stop = new AbortController();
  try {
    const running = watch(
      { json: true, inspect: 0 },
      { env: { NOMAD_ADDR: fake.address, NOMAD_TOKEN: token }, write: (l) => lines.push(l), clock, transport: { gzip: false }, signal: stop.signal },
    );
    await until(() => lines.length > 0);
    const { url } = JSON.parse(lines[0]!) as { type: string; url: string };
    expect(JSON.parse(lines[0]!)).toMatchObject({ type: 'inspector', url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/$/) });
    fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
    await driveTo(clock, scenario.closed);
    const verdicts = lines.map((l) => JSON.parse(l) as { type: string; allocId?: string }).filter((l) => l.type === 'verdict');
    expect(verdicts.length).toBeGreaterThan(0);
    const snapshot = await fetchSnapshot(url);
    expect(snapshot.connection.state).toBe('streaming');
    expect(snapshot.allocations.map((a) => a.id)).toEqual(expect.arrayContaining(verdicts.map((v) => v.allocId)));
    for (const path of ['/', '/app.js', '/api/snapshot']) expect((await get(url, path)).body).not.toContain(token);
    stop.abort();
    expect(await running).toBe(0);
    await expect(get(url, '/api/snapshot')).rejects.toThrow();
  } finally {
    stop.abort();
    await fake.close();
  }
});

test('warden demo prints the inspector URL, which shows the three recorded deployments judged, until the demo lets go', async () => {
  const clock = new VirtualClock({ start: loadScenario('failed_task').opened });
  const lines: string[] = [];
  let seen: InspectorSnapshot | undefined;
  let finished = false;
  const running = runDemo({
    clock,
    recordingsDir: SCENARIOS,
    write: (line) => lines.push(line),
    inspectPort: 0,
    linger: async () => {
      seen = await fetchSnapshot(/Inspector .*?(http:\/\/127\.0\.0\.1:\d+\/)/.exec(lines.join('\n'))![1]!);
    },
  }).then(() => (finished = true));
  for (let i = 0; i < 400 && !finished; i++) await driveTo(clock, clock.now() + 500);
  await running;
  await flush();
  expect(lines.join('\n')).toMatch(/The inspector stays open at http:\/\/127\.0\.0\.1:\d+\/: Ctrl-C to end\./);
  const jobs = new Set(seen!.allocations.map((a) => `${a.jobId} v${a.jobVersion}`));
  expect(jobs).toEqual(new Set(['failed-task v0', 'rolling-update v0', 'rolling-update v1']));
  expect(seen!.allocations.every((a) => a.finished && a.verdict !== null)).toBe(true);
  expect(seen!.evaluations.map((e) => e.outcome?.ok)).toEqual(expect.arrayContaining([true, false]));
});
