/** The runner pools part of `warden demo`, on a VirtualClock driven as the demo drives it. */
import { runPoolDemo } from '../../src/cli/poolDemo.js';
import { VirtualClock } from '../../src/clock/index.js';
import { QuietDriver } from '../../src/testing/quiet.js';

test('creates a pool of 3, claims one, runs a command, writes and lists a file, lets inactivity destroy it, refills', async () => {
  const clock = new VirtualClock({ start: Date.UTC(2026, 11, 1, 12) });
  const lines: string[] = [];
  let finished = false;
  const driver = new QuietDriver(clock);
  const running = runPoolDemo({ clock, driver, write: (line) => lines.push(line), style: { color: false, shortTime: true } }).then(() => (finished = true));
  // Time stands still while a command runs (the fake's commands keep the driver waiting).
  for (let i = 0; i < 1_000 && !finished; i++) await driver.advanceTo(clock.now() + 500);
  if (!finished) throw new Error(`the demo did not finish:\n${lines.join('\n')}`);
  await running;
  const text = lines.join('\n');
  const order = [
    'environment 1 registered as job template-1',
    'pool: 3/3 idle, 0 used',
    'claimed 1-',
    'hello from ',
    'exit code 0',
    'wrote hello.py',
    '-rwxr--r-- ',
    'left alone',
    'destroyed: runner inactivity timeout exceeded',
    'the pool is full again: 3 idle runners',
  ].map((needle) => text.indexOf(needle));
  expect({ order, text }).toEqual({ order: [...order].sort((a, b) => a - b), text });
  expect(order.every((at) => at >= 0)).toBe(true);
  // The command ran in the runner's task directory (<alloc dir>/default-task/local).
  expect(text).toMatch(/hello from default-task\n/);
  expect(text).toMatch(/\.\/hello\.py/);
  expect(text).not.toContain('went before its work was done');
}, 120_000);
