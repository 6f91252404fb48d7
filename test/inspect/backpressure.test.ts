/**
 * A browser that stops reading must not grow the server's memory: its deltas wait coalesced per
 * allocation (a newer one replaces the older), at most `maxPending` of them, then give way to one
 * snapshot marked `resynced`; once it reads again it ends with the same state as a client that
 * kept up, and with the current timeline of the allocation it follows. Tasks with long names make each delta about 20 KB, so the stalled socket's kernel
 * buffers fill and the server has to hold back.
 */
import type { ClientBacklog } from '../../src/inspect/index.js';
import { serviceJob } from '../testing/helpers.js';
import { driveTo } from '../supervisor/support/harness.js';
import { byId, fetchSnapshot, openLive, rebuild, startInspected, until } from './support.js';

const START = Date.UTC(2026, 10, 29, 18);
const HIGH_WATER = 16 * 1024;
const ALLOCATIONS = 60;

async function stallDuringLoad(maxPending: number, check: (samples: ClientBacklog[], stalled: ClientBacklog) => void): Promise<void> {
  const inspected = await startInspected(START, { finishedLimit: 10, server: { highWaterBytes: HIGH_WATER, maxPending, tickMs: 0 } });
  try {
    const slow = await openLive(inspected.server.url);
    const fast = await openLive(inspected.server.url);
    await until(() => slow.messages.length >= 1 && fast.messages.length >= 1);
    const tasks = Array.from({ length: 5 }, (_, i) => ({ Name: `task${i}-${'x'.repeat(4_000)}`, Driver: 'raw_exec', Config: { command: '/bin/sh' } }));
    const { cluster } = inspected.fake;
    cluster.registerJob(serviceJob('bulk', { TaskGroups: [{ Name: 'app', Count: ALLOCATIONS, Tasks: tasks }] }));
    const allocations = cluster.placeAllocations('bulk', { count: ALLOCATIONS });
    // The slow client follows the timeline of the allocation placed last (so judged last, and among
    // the finished ones kept), which must also end up current.
    const followed = allocations.at(-1)!.ID;
    slow.send({ type: 'follow', allocationId: followed });
    slow.pause();
    const samples: ClientBacklog[] = [];
    let largest = 0;
    const step = async (until: number): Promise<void> => {
      await driveTo(inspected.clock, until);
      samples.push(inspected.server.backlog()[0]!);
      largest = Math.max(largest, ...fast.texts.map((text) => Buffer.byteLength(text)));
    };
    await step(START + 200);
    for (const task of tasks) {
      for (const alloc of allocations) cluster.startTask(alloc.ID, task.Name);
      await step(inspected.clock.now() + 100);
    }
    // A restart of every allocation's first task, then min_healthy_time (2s) and the verdicts.
    for (const alloc of allocations) cluster.failTask(alloc.ID, tasks[0]!.Name, { restartDelayMs: 100 });
    await step(inspected.clock.now() + 150);
    for (const alloc of allocations) cluster.startTask(alloc.ID, tasks[0]!.Name);
    await step(inspected.clock.now() + 3_000);
    expect(fast.texts.reduce((sum, text) => sum + Buffer.byteLength(text), 0)).toBeGreaterThan(8 * 1024 * 1024);
    for (const sample of samples) {
      expect(sample.pending).toBeLessThanOrEqual(maxPending);
      // A message is only written while the socket holds less than the high-water mark.
      expect(sample.bufferedBytes).toBeLessThan(HIGH_WATER + largest);
    }
    const [stalled, keptUp] = inspected.server.backlog();
    expect(keptUp).toEqual({ bufferedBytes: 0, pending: 0, resyncDue: false, resyncs: 0 });
    check(samples, stalled!);
    // Finished allocations: only the last `finishedLimit` are kept.
    expect(inspected.model.sizes).toMatchObject({ live: 0, finished: 10 });
    const final = await fetchSnapshot(inspected.server.url);
    slow.resume();
    await until(() => inspected.server.backlog()[0]!.bufferedBytes === 0 && inspected.server.backlog()[0]!.pending === 0 && !inspected.server.backlog()[0]!.resyncDue, 2_000);
    await until(() => rebuild(slow.messages).size === final.allocations.length, 2_000);
    expect(rebuild(slow.messages)).toEqual(byId(final));
    const timelines = slow.messages.filter((m) => m.type === 'timeline');
    expect(timelines.at(-1)).toMatchObject({ allocationId: followed, timeline: inspected.model.timeline(followed) });
    expect(inspected.model.timeline(followed)!.entries.at(-1)).toMatchObject({ state: 'healthy' });
    expect(rebuild(fast.messages)).toEqual(byId(final));
    expect(fast.messages.filter((m) => m.type === 'snapshot')).toHaveLength(1);
    expect(slow.texts.length).toBeLessThan(fast.texts.length);
    if (stalled!.resyncDue) expect(slow.messages.some((m) => m.type === 'snapshot' && m.resynced === true)).toBe(true);
    slow.close();
    fast.close();
  } finally {
    await inspected.close();
  }
}

describe('a client that stops reading', () => {
  test('its deltas wait coalesced, one per allocation, and it catches up with the server state', async () => {
    await stallDuringLoad(1_000, (samples, stalled) => {
      expect(samples.some((sample) => sample.pending > 0)).toBe(true);
      // One waiting delta per allocation at most (and the followed timeline), however many steps each took.
      for (const sample of samples) expect(sample.pending).toBeLessThanOrEqual(ALLOCATIONS + 1);
      expect(stalled).toMatchObject({ resyncDue: false, resyncs: 0 });
    });
  });

  test('past maxPending its deltas are dropped for one snapshot marked resynced, sent once it reads again', async () => {
    await stallDuringLoad(40, (samples, stalled) => {
      expect(samples.some((sample) => sample.resyncDue)).toBe(true);
      expect(stalled).toMatchObject({ pending: 0, resyncDue: true });
    });
  });
});
