/** `warden demo` on a VirtualClock: the three recorded deployments, judged live, in order. */
import { mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultRecordingsDir, runDemo } from '../../src/cli/demoCommand.js';
import { VirtualClock } from '../../src/clock/index.js';
import { driveTo, loadScenario, SCENARIOS } from '../supervisor/support/harness.js';

test('the demo replays a failing task, a placement failure and a rolling update, and says what Warden concludes', async () => {
  const clock = new VirtualClock({ start: loadScenario('failed_task').opened });
  const lines: string[] = [];
  let finished = false;
  const running = runDemo({ clock, recordingsDir: SCENARIOS, write: (line) => lines.push(line) }).then(() => (finished = true));
  for (let i = 0; i < 400 && !finished; i++) await driveTo(clock, clock.now() + 500);
  await running;
  const text = lines.join('\n');
  const order = ['▶ 1/3  A task that fails at once', '▶ 2/3  A job that cannot be placed', '▶ 3/3  A rolling update', 'Done.'].map((head) =>
    text.indexOf(head),
  );
  expect(order.every((at, i) => at >= 0 && (i === 0 || at > order[i - 1]!))).toBe(true);
  const [failing, placement, rolling] = [text.slice(order[0], order[1]), text.slice(order[1], order[2]), text.slice(order[2], order[3])];
  expect(failing).toMatch(/failed-task\.app\[0\] c13982a7 {2}unhealthy {2}main: Unhealthy because of failed task/);
  expect(failing).toContain('✘ failed-task version 0: 1 allocation unhealthy');
  expect(placement).toContain('Task Group "app" (failed to place 1 allocation)');
  expect(placement).toContain('Dimension "memory" exhausted on 1 nodes');
  expect(placement).toContain('waiting for additional capacity to place remainder');
  expect(rolling.match(/rolling-update\.app\[\d\] [0-9a-f]{8} {2}healthy/g)).toHaveLength(6);
  expect(rolling).toContain('✔ rolling-update version 0: deployment healthy, 3 allocation(s) healthy');
  expect(rolling).toContain('✔ rolling-update version 1: deployment healthy, 3 allocation(s) healthy');
  // Times are the recording's own: the last v1 allocation healthy at ≈12.8 s into its stream (README).
  expect(text).not.toMatch(/\[connection lost/);
});

test('the demo finds the recordings from the warden script, through the npm bin symlink too', () => {
  const root = join(__dirname, '..', '..');
  const link = join(mkdtempSync(join(tmpdir(), 'warden-bin-')), 'warden');
  symlinkSync(join(root, 'src', 'cli', 'bin.ts'), link);
  expect(defaultRecordingsDir(link)).toBe(SCENARIOS);
  expect(defaultRecordingsDir(join(root, 'src', 'cli', 'bin.ts'))).toBe(SCENARIOS);
});
