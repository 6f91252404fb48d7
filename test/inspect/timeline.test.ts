/**
 * Each allocation's timeline: one entry per step of its health machine (first sight, updates of the
 * allocation, of its checks, timers), with what changed in words and the move it made; served to a
 * page that follows the allocation over the WebSocket, and as JSON; bounded; and only where the
 * inspect hook shows the steps.
 */
import type { TimelineEntry, TimelineInfo, TimelineMessage } from '../../src/inspect/index.js';
import { isoTime } from '../../src/inspect/time.js';
import { serviceJob } from '../testing/helpers.js';
import { driveTo } from '../supervisor/support/harness.js';
import { get, openLive, startInspected, until, type Inspected } from './support.js';

const START = Date.UTC(2026, 10, 29, 18);
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** One allocation of a two-task group: both start, the sidecar restarts once, then min_healthy_time passes. */
async function restartThenHealthy(inspected: Inspected): Promise<string> {
  const { cluster } = inspected.fake;
  const tasks = ['main', 'logger'].map((name) => ({ Name: name, Driver: 'raw_exec', Config: { command: '/bin/sh' } }));
  cluster.registerJob(serviceJob('web', { TaskGroups: [{ Name: 'app', Count: 1, Tasks: tasks }] }));
  const [alloc] = cluster.placeAllocations('web');
  const id = alloc!.ID;
  // Its client has it at once: Nomad watches an allocation from then.
  cluster.receiveAllocation(id);
  await driveTo(inspected.clock, START + 500);
  cluster.startTask(id, 'main');
  await driveTo(inspected.clock, START + 700);
  cluster.startTask(id, 'logger');
  await driveTo(inspected.clock, START + 1_000);
  cluster.failTask(id, 'logger', { restartDelayMs: 200 });
  await driveTo(inspected.clock, START + 1_300);
  cluster.startTask(id, 'logger');
  await driveTo(inspected.clock, START + 5_000);
  return id;
}

const brief = (entry: TimelineEntry): { cause: string; move: string | null } => ({ cause: entry.cause, move: entry.move && `${entry.move.from}→${entry.move.to}` });

test('the timeline lists every step: first sight, each update with what changed, the restart, and the timer into healthy', async () => {
  const inspected = await startInspected(START);
  try {
    const id = await restartThenHealthy(inspected);
    const timeline = inspected.model.timeline(id)!;
    expect(inspected.verdicts.map((v) => v.outcome)).toEqual([expect.objectContaining({ healthy: true })]);
    const { entries } = timeline;
    expect(timeline.dropped).toBe(0);
    expect(entries.map((entry) => entry.seq)).toEqual(entries.map((_, i) => i + 1));
    for (const entry of entries) expect(entry.at).toMatch(ISO);
    expect(entries.map((entry) => Date.parse(entry.at))).toEqual(entries.map((entry) => Date.parse(entry.at)).sort((a, b) => a - b));

    expect(entries[0]).toMatchObject({ cause: 'tracked', state: 'pending', move: null, at: new Date(START).toISOString() });
    expect(entries[0]!.changes).toEqual(
      expect.arrayContaining(['task main: pending', 'task logger: pending', 'judged by task states: min_healthy_time 2s, healthy_deadline 20s']),
    );
    const changes = entries.flatMap((entry) => entry.changes);
    expect(changes).toEqual(
      expect.arrayContaining(['task main: pending → running', 'task logger: pending → running', 'task logger restarted (1 restart)', 'min_healthy_time of 2s passed']),
    );
    // The moves, in order, each on the step that made it.
    expect(entries.filter((entry) => entry.move).map(brief)).toEqual([
      { cause: 'allocation', move: 'pending→running' },
      { cause: 'allocation', move: 'running→minHealthyWait' },
      // The restart moves the window: out of minHealthyWait and back.
      { cause: 'allocation', move: 'minHealthyWait→running' },
      { cause: 'allocation', move: 'running→minHealthyWait' },
      { cause: 'timer', move: 'minHealthyWait→healthy' },
    ]);
    expect(entries.find((entry) => entry.move?.from === 'minHealthyWait' && entry.move.to === 'running')!.changes).toEqual([
      'task logger restarted (1 restart)',
      'task logger: running → pending',
    ]);
    expect(entries.at(-1)).toMatchObject({ state: 'healthy', at: isoTime(inspected.verdicts[0]!.outcome.at) });
  } finally {
    await inspected.close();
  }
});

test('a page following an allocation gets its timeline at once and after each change, until it follows another or none', async () => {
  const inspected = await startInspected(START);
  try {
    const live = await openLive(inspected.server.url);
    await until(() => live.messages.length >= 1);
    const { cluster } = inspected.fake;
    cluster.registerJob(serviceJob('web', { TaskGroups: [{ Name: 'app', Count: 2, Tasks: [{ Name: 'main', Driver: 'raw_exec', Config: { command: '/bin/sh' } }] }] }));
    const [first, second] = cluster.placeAllocations('web');
    for (const alloc of [first!, second!]) cluster.receiveAllocation(alloc.ID);
    await driveTo(inspected.clock, START + 300);
    const timelines = (): (TimelineInfo | null)[] => live.messages.filter((m) => m.type === 'timeline').map((m) => (m as unknown as TimelineMessage).timeline);

    live.send({ type: 'follow', allocationId: first!.ID });
    await until(() => timelines().length === 1);
    expect(timelines()[0]).toEqual(inspected.model.timeline(first!.ID));
    cluster.startTask(first!.ID, 'main');
    cluster.startTask(second!.ID, 'main');
    await driveTo(inspected.clock, START + 600);
    await until(() => timelines().length >= 2);
    expect(timelines().every((timeline) => timeline?.allocationId === first!.ID)).toBe(true);
    expect(timelines().at(-1)).toEqual(inspected.model.timeline(first!.ID));

    // Anything else a page sends is ignored: not JSON, another type, an ID far too long.
    for (const junk of ['not json', { type: 'subscribe' }, { type: 'follow', allocationId: 'x'.repeat(300) }, { type: 'follow', allocationId: 7 }]) live.send(junk);
    live.send({ type: 'follow', allocationId: 'no-such-allocation' });
    await until(() => timelines().at(-1) === null);
    const count = timelines().length;
    live.send({ type: 'follow', allocationId: null });
    await driveTo(inspected.clock, START + 5_000);
    expect(inspected.verdicts).toHaveLength(2);
    expect(timelines()).toHaveLength(count);
    live.close();
  } finally {
    await inspected.close();
  }
});

test('GET /api/allocations/<id>/timeline serves it with the schema version; an unknown allocation is a 404', async () => {
  const inspected = await startInspected(START);
  try {
    const id = await restartThenHealthy(inspected);
    const served = await get(inspected.server.url, `/api/allocations/${encodeURIComponent(id)}/timeline`);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toMatch(/^application\/json/);
    expect(JSON.parse(served.body)).toEqual({ schemaVersion: 1, now: new Date(inspected.clock.now()).toISOString(), timeline: inspected.model.timeline(id) });
    expect((await get(inspected.server.url, '/api/allocations/nope/timeline')).status).toBe(404);
  } finally {
    await inspected.close();
  }
});

test('a timeline keeps the latest timelineLimit steps and counts the ones let go; without the inspect hook there is none', async () => {
  const bounded = await startInspected(START, { timelineLimit: 3 });
  try {
    const id = await restartThenHealthy(bounded);
    const { entries, dropped } = bounded.model.timeline(id)!;
    expect(entries).toHaveLength(3);
    expect(entries[0]!.seq).toBe(dropped + 1);
    expect(entries.at(-1)).toMatchObject({ cause: 'timer', state: 'healthy' });
  } finally {
    await bounded.close();
  }
  const unhooked = await startInspected(START, { inspectHook: false });
  try {
    const id = await restartThenHealthy(unhooked);
    expect(unhooked.model.snapshot().allocations.map((a) => a.state)).toEqual(['healthy']);
    expect(unhooked.model.timeline(id)).toBeUndefined();
  } finally {
    await unhooked.close();
  }
});
