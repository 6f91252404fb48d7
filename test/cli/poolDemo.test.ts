/** The runner pools part of `warden demo`, on a VirtualClock driven as the demo test drives it. */
import { runPoolDemo } from '../../src/cli/poolDemo.js';
import { VirtualClock } from '../../src/clock/index.js';
import { driveTo } from '../supervisor/support/harness.js';

test('creates a pool of 3, claims one, runs a command, writes and lists a file, lets inactivity destroy it, refills', async () => {
  const clock = new VirtualClock({ start: Date.UTC(2026, 11, 1, 12) });
  const lines: string[] = [];
  let finished = false;
  const running = runPoolDemo({ clock, write: (line) => lines.push(line), style: { color: false, shortTime: true } }).then(() => (finished = true));
  // The demo's clock races on while its commands run in real time: the budget is generous.
  for (let i = 0; i < 5_000 && !finished; i++) await driveTo(clock, clock.now() + 500);
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
  expect(text).toMatch(/hello from \/.*\/[0-9a-f-]{36}\/default-task\/local\n/);
  expect(text).toMatch(/\.\/hello\.py/);
  expect(text).not.toContain('went before its work was done');
}, 120_000);
