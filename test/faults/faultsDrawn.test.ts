/** The faults a seed draws: the same every time, and over the seeds, every kind of fault. */
import { SEEDS, faultsOf } from './support.js';

test('a seed always draws the same faults; the seeds together draw every kind, at every stage of a scenario', () => {
  expect(faultsOf(1234, 30_000)).toEqual(faultsOf(1234, 30_000));
  const drawn = SEEDS.flatMap((seed) => faultsOf(seed, 30_000));
  const kinds = new Set(drawn.map((fault) => (fault.kind === 'stream' ? Object.keys(fault.plan).sort().join('+') : fault.kind)));
  for (const kind of ['cutAfterEvents', 'truncateAfterEvents', 'stallAfterEvents', 'errorAfterEvents', 'cutAfterEvents+reorderProbability+repeatProbability+seed', 'requests', 'refuse', 'restart']) {
    expect([kind, kinds.has(kind)]).toEqual([kind, true]);
  }
  expect(new Set(drawn.flatMap((fault) => (fault.kind === 'requests' ? [fault.status] : [])))).toEqual(new Set([500, 503, 429]));
  expect(drawn.some((fault) => fault.at < 2_000)).toBe(true);
  expect(drawn.some((fault) => fault.at > 20_000)).toBe(true);
});
