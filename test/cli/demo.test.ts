/** `warden demo` on a VirtualClock: the three recorded deployments, judged live, in order; the same output every time. */
import { spawn } from 'node:child_process';
import { mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runDemo } from '../../src/cli/demoCommand.js';
import { defaultRecordingsDir } from '../../src/cli/commandLine/demo.js';
import { VirtualClock } from '../../src/clock/index.js';
import { loadScenario, SCENARIOS } from '../supervisor/support/harness.js';

/** The demo's output: it drives its own clock, from the first recording's opening. */
async function demoOutput(pools = false): Promise<string> {
  const lines: string[] = [];
  await runDemo({ clock: new VirtualClock({ start: loadScenario('failed_task').opened }), recordingsDir: SCENARIOS, write: (line) => lines.push(line), pools });
  return lines.join('\n');
}

test('the demo replays a failing task, a placement failure and a rolling update, and says what Warden concludes', async () => {
  const text = await demoOutput();
  const order = ['▶ 1/3  A task that fails at once', '▶ 2/3  A job that cannot be placed', '▶ 3/3  A rolling update', 'Done.'].map((head) =>
    text.indexOf(head),
  );
  expect(order.every((at, i) => at >= 0 && (i === 0 || at > order[i - 1]!))).toBe(true);
  const [failing, placement, rolling] = [text.slice(order[0], order[1]), text.slice(order[1], order[2]), text.slice(order[2], order[3])];
  expect(failing).toMatch(/failed-task\.app\[0\] c13982a7 {2}unhealthy {2}main: Unhealthy because of failed task/);
  expect(failing).toContain('✘ failed-task version 0: Deployment failed: Failed due to progress deadline; 1 allocation unhealthy');
  expect(placement).toContain('Task Group "app" (failed to place 1 allocation)');
  expect(placement).toContain('Dimension "memory" exhausted on 1 nodes');
  expect(placement).toContain('waiting for additional capacity to place remainder');
  expect(rolling.match(/rolling-update\.app\[\d\] [0-9a-f]{8} {2}healthy/g)).toHaveLength(6);
  expect(rolling).toContain('✔ rolling-update version 0: deployment healthy, 3 allocation(s) healthy');
  expect(rolling).toContain('✔ rolling-update version 1: deployment healthy, 3 allocation(s) healthy');
  // Times are the recording's own: the last v1 allocation healthy at ≈12.8 s into its stream (README).
  expect(text).not.toMatch(/\[connection lost/);
});

/** Loopback ports and the runners' random IDs change from run to run; nothing else may. */
function withoutRandomParts(text: string): string {
  return text.replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:<port>').replace(/\b1-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, '1-<runner uuid>');
}

test('the same output every time, on a machine both of whose cores are busy, and it always ends', async () => {
  const hogs = [0, 1].map(() => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  try {
    const first = withoutRandomParts(await demoOutput(true));
    const second = withoutRandomParts(await demoOutput(true));
    expect(second).toEqual(first);
    expect(first).toContain('the pool is full again');
    expect(first).toMatch(/Done\./);
  } finally {
    for (const hog of hogs) hog.kill('SIGKILL');
  }
}, 120_000);

test('the demo finds the recordings from the warden script, through the npm bin symlink too', () => {
  const root = join(__dirname, '..', '..');
  const link = join(mkdtempSync(join(tmpdir(), 'warden-bin-')), 'warden');
  symlinkSync(join(root, 'src', 'cli', 'bin.ts'), link);
  expect(defaultRecordingsDir(link)).toBe(SCENARIOS);
  expect(defaultRecordingsDir(join(root, 'src', 'cli', 'bin.ts'))).toBe(SCENARIOS);
});
