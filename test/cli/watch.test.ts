/** `warden watch` following FakeNomad over loopback while a recording replays, on a VirtualClock. */
import { watch } from '../../src/cli/watchCommand.js';
import { VirtualClock } from '../../src/clock/index.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { driveTo, flush, loadScenario, requestedIndex, stripNomadVerdict } from '../supervisor/support/harness.js';

async function watchDuring(name: string, json: boolean, env: Record<string, string> = {}) {
  const scenario = loadScenario(name);
  const clock = new VirtualClock({ start: scenario.opened });
  const fake = await FakeNomad.start({ clock });
  const lines: string[] = [];
  const stop = new AbortController();
  const running = watch({ json }, { env: { NOMAD_ADDR: fake.address, ...env }, write: (l) => lines.push(l), clock, transport: { gzip: false }, signal: stop.signal });
  await flush();
  fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
  await driveTo(clock, scenario.closed + 1_000);
  stop.abort();
  const exitCode = await running;
  await fake.close();
  return { lines, exitCode, scenario };
}

describe('warden watch', () => {
  test('one line per state change and verdict, with the reasons', async () => {
    const { lines, exitCode } = await watchDuring('failed_task', false);
    expect(exitCode).toBe(0);
    const time = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z';
    expect(lines[0]).toMatch(new RegExp(`^${time}  \\[connecting\\] http://127\\.0\\.0\\.1:\\d+$`));
    expect(lines).toContainEqual(expect.stringMatching(/\[streaming events\]/));
    const alloc = lines.filter((l) => l.includes('failed-task.app[0]'));
    // The task ran 8 ms before it failed: its history says so, whenever Warden saw it.
    expect(alloc).toEqual([
      '2026-11-29T17:05:15.184Z  failed-task.app[0] c13982a7  pending → minHealthyWait',
      '2026-11-29T17:05:15.192Z  failed-task.app[0] c13982a7  minHealthyWait → unhealthy',
      '2026-11-29T17:05:15.192Z  failed-task.app[0] c13982a7  unhealthy  main: Unhealthy because of failed task',
    ]);
  });

  test('--json: one JSON object a line, state changes then the verdict', async () => {
    const { lines } = await watchDuring('healthy_task_states', true);
    const objects = lines.map((l) => JSON.parse(l) as { type: string; verdict?: string; to?: string; jobId?: string; allocId?: string });
    const ours = objects.filter((o) => o.jobId === 'healthy-task-states');
    const verdicts = ours.filter((o) => o.type === 'verdict');
    expect(verdicts).toHaveLength(2);
    expect(verdicts.every((v) => v.verdict === 'healthy')).toBe(true);
    for (const verdict of verdicts) {
      const changes = ours.filter((o) => o.type === 'state' && o.allocId === verdict.allocId).map((o) => o.to);
      expect(changes).toEqual(['minHealthyWait', 'healthy']);
    }
    expect(objects.filter((o) => o.type === 'connection').map((o) => (o as { state?: string }).state)).toContain('streaming');
  });

  test('NOMAD_NAMESPACE in the environment it is given scopes the watch, as the Nomad CLI', async () => {
    const { lines, exitCode } = await watchDuring('failed_task', false, { NOMAD_NAMESPACE: 'elsewhere' });
    expect(exitCode).toBe(0);
    expect(lines).toContainEqual(expect.stringMatching(/\[streaming events\]/));
    expect(lines.filter((l) => l.includes('failed-task.app[0]'))).toEqual([]);
  });

  test('a refused token ends the watch with exit code 2, the token never printed', async () => {
    const clock = new VirtualClock({ start: Date.UTC(2026, 10, 29, 17) });
    const fake = await FakeNomad.start({ clock, token: 'right-token' });
    const lines: string[] = [];
    const running = watch({}, { env: { NOMAD_ADDR: fake.address, NOMAD_TOKEN: 'wrong-token-42' }, write: (l) => lines.push(l), clock, transport: { gzip: false } });
    let code: number | undefined;
    void running.then((c) => (code = c));
    for (let i = 0; i < 20 && code === undefined; i++) await driveTo(clock, clock.now() + 1_000);
    expect(code).toBe(2);
    expect(lines.join('\n')).toContain('problem');
    expect(lines.join('\n')).not.toContain('wrong-token-42');
    await fake.close();
  });
});
