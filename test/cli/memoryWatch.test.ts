import { watchMemory } from '../../src/cli/memoryWatch.js';
import { VirtualClock } from '../../src/clock/index.js';
import type { LogFields } from '../../src/logger.js';

test("Poseidon's memory watchdog: every interval, a warning when the heap reaches the threshold (MB of 10^6 bytes), once, and a note when it is below again", () => {
  const clock = new VirtualClock();
  const records: [string, string, LogFields][] = [];
  const log = (level: string) => (fields: LogFields, message: string) => void records.push([level, message, fields]);
  const heaps = [10e6, 20e6, 25e6, 19_999_999, 5e6, 30e6];
  const stop = watchMemory({
    clock,
    intervalMs: 1_000,
    thresholdMb: 20,
    logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') },
    heapUsed: () => heaps.shift() ?? 0,
  });
  for (let i = 0; i < 5; i++) clock.advance(1_000);
  stop();
  clock.advance(10_000);
  expect(records).toEqual([
    ['warn', 'Memory Threshold exceeded', { heap: 20e6, thresholdMb: 20 }],
    ['info', 'Memory Threshold no longer exceeded', { heap: 19_999_999, thresholdMb: 20 }],
    ['warn', 'Memory Threshold exceeded', { heap: 30e6, thresholdMb: 20 }],
  ]);
  // Stopped: no timer left, no more reads.
  expect(heaps).toEqual([]);
  expect(clock.pending()).toBe(0);
});
