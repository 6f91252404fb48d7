/**
 * FreshnessHorizon alone, on a VirtualClock, with Nomad's reads stubbed: one timer and one read a
 * round however many allocations wait, the settle window learnt from the longest recent delay, and
 * allocations whose reads failed confirmed by a later round.
 */
import { VirtualClock } from '../../src/clock/index.js';
import { FreshnessHorizon, type FreshnessOptions } from '../../src/intake/freshness.js';
import { NOT_WAITING, type HorizonWaiter } from '../../src/health/horizon.js';
import type { Allocation } from '../../src/nomad/types.js';
import { silentLogger } from '../../src/logger.js';

const START = Date.UTC(2026, 11, 1);

const settle = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
};

function horizonWith(options: { namespace?: string; failReads?: () => boolean; index?: number } = {}) {
  const clock = new VirtualClock({ start: START });
  const calls = { listings: 0, reads: [] as string[] };
  const nomad: FreshnessOptions['nomad'] = {
    listAllocations: async () => {
      calls.listings++;
      return { body: [], meta: { lastIndex: options.index ?? 7, knownLeader: true, lastContactMs: 0 } };
    },
    getAllocation: async (id: string) => {
      calls.reads.push(id);
      if (options.failReads?.()) throw new Error('connection refused');
      return { body: { ID: id } as Allocation, meta: { lastIndex: 7, knownLeader: true, lastContactMs: 0 } };
    },
  };
  const horizon = new FreshnessHorizon({ clock, nomad, namespace: 'namespace' in options ? options.namespace : 'default', deliver: () => undefined, logger: silentLogger, settleMs: 1_000, random: () => 0.5 });
  const advanced: string[][] = [];
  horizon.connect((waiters) => advanced.push([...waiters].map((waiter) => waiter.allocationId)));
  horizon.noteStreaming(true);
  horizon.noteDelivered(7);
  // Each allocation's record, as the registry would hold it (the horizon keeps its marks there).
  const records = new Map<string, HorizonWaiter>();
  const waiter = (allocationId: string): HorizonWaiter => {
    let record = records.get(allocationId);
    if (record === undefined) records.set(allocationId, (record = { allocationId, ...NOT_WAITING }));
    return record;
  };
  return { clock, horizon, calls, advanced, waiter };
}

describe('FreshnessHorizon', () => {
  test('one timer and one index read confirm every allocation due, in one announcement; the later ones wait for their own round', async () => {
    const { clock, horizon, calls, advanced, waiter } = horizonWith();
    for (let i = 0; i < 1_000; i++) horizon.request(waiter(`a${i}`), START + 100 + (i % 2) * 5_000);
    horizon.request(waiter('a0'), START + 100);
    horizon.release(waiter('a2'));
    expect(clock.pending()).toBe(1);
    clock.advanceTo(START + 1_099);
    await settle();
    expect(calls.listings).toBe(0);
    clock.advanceTo(START + 1_100);
    await settle();
    expect(calls.listings).toBe(1);
    expect(advanced).toHaveLength(1);
    expect(advanced[0]).toHaveLength(499);
    expect(horizon.knownUpTo(waiter('a1'))).toBe(START + 100);
    clock.advanceTo(START + 6_100);
    await settle();
    expect(calls.listings).toBe(2);
    expect(advanced[1]).toHaveLength(500);
    expect(clock.pending()).toBe(0);
  });

  test('the settle window is the longest of the last 128 delays with a margin, never below its floor', () => {
    const { clock, horizon } = horizonWith();
    // Streaming for a while: the delays below are of updates that happened since.
    clock.advance(10_000);
    expect(horizon.settleMs).toBe(1_000);
    horizon.noteLag(4_000);
    expect(horizon.settleMs).toBe(5_100);
    for (let i = 0; i < 127; i++) horizon.noteLag(2_000 - i);
    expect(horizon.settleMs).toBe(5_100);
    horizon.noteLag(10);
    expect(horizon.settleMs).toBe(Math.ceil(2_000 * 1.25) + 100);
    horizon.noteLag(Number.NaN);
    horizon.noteLag(-5);
    expect(horizon.settleMs).toBe(Math.ceil(2_000 * 1.25) + 100);
  });

  test('after a stall the window comes back down: a delay counts for two minutes of the clock, then the floor again', () => {
    const { clock, horizon } = horizonWith();
    clock.advance(120_000);
    // An 88 s stall: the updates of its last seconds arrive that late (more than the 30 s maximum).
    for (const late of [88_000, 60_000, 20_000]) horizon.noteLag(late);
    expect(horizon.settleMs).toBe(30_000);
    // Normal delays again, at a quiet cluster's pace: the stall's are remembered a while...
    for (let i = 0; i < 10; i++) {
      clock.advance(10_000);
      horizon.noteLag(300);
    }
    expect(horizon.settleMs).toBe(30_000);
    // ...and forgotten once two minutes old, though far fewer than 128 samples came since.
    clock.advance(20_001);
    expect(horizon.settleMs).toBe(1_000);
    horizon.noteLag(2_000);
    expect(horizon.settleMs).toBe(2_600);
    // Nothing more comes: after two minutes, the floor.
    clock.advance(120_001);
    expect(horizon.settleMs).toBe(1_000);
  });

  test("a reconnect's catch-up is not learnt: what happened during the outage is late by the outage, not by Nomad's delivery", () => {
    const { clock, horizon } = horizonWith();
    clock.advance(10_000);
    horizon.noteStreaming(false);
    clock.advance(60_000);
    horizon.noteStreaming(true);
    // The stream replays the batches written while it was down: each as late as the outage made it.
    for (const late of [59_000, 30_000, 1_000]) horizon.noteLag(late);
    expect(horizon.settleMs).toBe(1_000);
    // An update that happened after the reconnect and arrived late: learnt.
    clock.advance(5_000);
    horizon.noteLag(3_000);
    expect(horizon.settleMs).toBe(3_850);
    // Streaming on (no new connection): the time it began streaming stays.
    horizon.noteStreaming(true);
    horizon.noteLag(4_000);
    expect(horizon.settleMs).toBe(5_100);
  });

  test('allocations whose reads failed (a stream that cannot show other namespaces) wait, and a later round reads and confirms them', async () => {
    let failing = true;
    const { clock, horizon, calls, advanced, waiter } = horizonWith({ namespace: undefined, failReads: () => failing });
    horizon.request(waiter('x'), START + 100);
    horizon.request(waiter('y'), START + 100);
    clock.advanceTo(START + 1_100);
    await settle();
    expect(advanced).toEqual([]);
    expect(clock.pending()).toBe(1);
    failing = false;
    clock.advanceTo(clock.nextDue() as number);
    await settle();
    expect(advanced).toEqual([['x', 'y']]);
    expect(calls.reads.slice(-2).sort()).toEqual(['x', 'y']);
    expect(horizon.knownUpTo(waiter('x'))).toBeGreaterThanOrEqual(START + 100);
  });
});
