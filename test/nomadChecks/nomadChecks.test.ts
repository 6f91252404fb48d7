/**
 * Nomad's own service checks (provider = "nomad", Nomad 1.4+), judged as Nomad's tracker does
 * (client/allochealth/tracker.go watchNomadEvents): success passes, failure fails unless the check
 * is readiness (on_update = "ignore"), pending never passes; checks passing for min_healthy_time
 * while the tasks are healthy make the allocation healthy. Read from FakeNomad's 2.0 mode over
 * loopback, polled only for allocations that wait on them, with bounded concurrency, on the clock.
 */
import type { IncomingMessage } from 'node:http';
import { VirtualClock } from '../../src/clock/index.js';
import { NomadClient } from '../../src/nomad/client.js';
import { checkViewsFromResults } from '../../src/nomadChecks/checkResults.js';
import { NomadCheckPoller } from '../../src/nomadChecks/checkPoller.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { checkedJob, type ServiceSpec } from '../consul/harness.js';
import { SETTLE_MS, driveTo, flush, startHarness, type Harness } from '../supervisor/support/harness.js';

const START = Date.UTC(2026, 11, 1, 9);

interface World extends Harness {
  /** GET …/checks requests by allocation. */
  polls: Map<string, number>;
}

/** The harness over FakeNomad's 2.0 mode, counting the check reads it answers. */
async function world(): Promise<World> {
  const polls = new Map<string, number>();
  const harness = await startHarness(START, {}, (fake) =>
    fake.server.prependListener('request', (req: IncomingMessage) => {
      const allocId = /^\/v1\/allocation\/([^/?]+)\/checks/.exec(req.url ?? '')?.[1];
      if (allocId !== undefined) polls.set(allocId, (polls.get(allocId) ?? 0) + 1);
    }),
  { version: '2.0' });
  return { ...harness, polls };
}

const WEB: readonly ServiceSpec[] = [{ name: 'web', checks: [{ name: 'alive' }, { name: 'ready', onUpdate: 'ignore' }] }];

function place(w: World, id: string, services = WEB, count = 1): string[] {
  w.fake.cluster.registerJob(checkedJob(id, services, { provider: 'nomad', count }));
  return w.fake.cluster.placeAllocations(id).map((alloc) => alloc.ID);
}

const outcomeOf = (w: World, allocId: string) => w.verdicts.find((v) => v.alloc.allocId === allocId)?.outcome;

describe("Nomad's own checks read from GET /v1/allocation/:id/checks", () => {
  test('healthy once the checks pass for min_healthy_time (2 s) after the task started; readiness may fail; no Consul needed', async () => {
    const w = await world();
    try {
      const [alloc] = place(w, 'web');
      await driveTo(w.clock, START + 500);
      w.fake.cluster.startTask(alloc!);
      // Pending until they first run: the task alone is not enough.
      await driveTo(w.clock, START + 4_000);
      expect(w.verdicts).toEqual([]);
      w.fake.checks.set(alloc!, { task: 'main', service: 'web', check: 'alive' }, { status: 'success', statusCode: 200 });
      w.fake.checks.set(alloc!, { task: 'main', service: 'web', check: 'ready' }, { status: 'failure', output: 'not yet' });
      const passingFrom = w.clock.now();
      await driveTo(w.clock, START + 8_000);
      const outcome = outcomeOf(w, alloc!);
      expect(outcome).toEqual({ healthy: true, at: expect.any(Number), reasons: {} });
      // Seen passing at the first poll after they did (every 500 ms), healthy min_healthy_time later.
      expect((outcome as { at: number }).at - passingFrom).toBeGreaterThanOrEqual(2_000);
      expect((outcome as { at: number }).at - passingFrom).toBeLessThanOrEqual(2_500);
    } finally {
      await w.close();
    }
  });

  test('a failing healthiness check keeps it from healthy until the deadline (20 s): unhealthy, and a pending readiness check never passes', async () => {
    const w = await world();
    try {
      const [failing, pending] = [place(w, 'failing')[0]!, place(w, 'pending')[0]!];
      await driveTo(w.clock, START + 500);
      for (const alloc of [failing, pending]) w.fake.cluster.startTask(alloc);
      w.fake.checks.set(failing, { task: 'main', service: 'web', check: 'alive' }, { status: 'failure' });
      w.fake.checks.set(failing, { task: 'main', service: 'web', check: 'ready' }, { status: 'success' });
      w.fake.checks.set(pending, { task: 'main', service: 'web', check: 'alive' }, { status: 'success' });
      await driveTo(w.clock, START + 19_000);
      expect(w.verdicts).toEqual([]);
      await driveTo(w.clock, START + 21_000 + SETTLE_MS);
      for (const alloc of [failing, pending]) {
        expect(outcomeOf(w, alloc)).toEqual(expect.objectContaining({ healthy: false, reasons: { main: expect.any(String) } }));
      }
      expect(outcomeOf(w, failing)).toEqual(expect.objectContaining({ reasons: { main: 'Services not healthy by deadline: web' } }));
    } finally {
      await w.close();
    }
  });

  test('a check that fails inside the window starts it again', async () => {
    const w = await world();
    try {
      const [alloc] = place(w, 'flappy');
      w.fake.cluster.startTask(alloc!);
      w.fake.checks.setAll(alloc!, 'success');
      await driveTo(w.clock, START + 1_500);
      w.fake.checks.set(alloc!, { task: 'main', service: 'web', check: 'alive' }, { status: 'failure' });
      await driveTo(w.clock, START + 3_000);
      w.fake.checks.set(alloc!, { task: 'main', service: 'web', check: 'alive' }, { status: 'success' });
      const again = w.clock.now();
      await driveTo(w.clock, START + 4_000);
      expect(w.verdicts).toEqual([]);
      await driveTo(w.clock, START + 7_000);
      const at = (outcomeOf(w, alloc!) as { at: number; healthy: boolean }).at;
      expect(outcomeOf(w, alloc!)).toEqual(expect.objectContaining({ healthy: true }));
      expect(at).toBeGreaterThanOrEqual(again + 2_000);
    } finally {
      await w.close();
    }
  });
});

describe('polling', () => {
  test('only allocations that wait on their checks are asked, every 500 ms, and none once judged', async () => {
    const w = await world();
    try {
      const allocs = place(w, 'many', WEB, 20);
      const [idle] = place(w, 'idle');
      await driveTo(w.clock, START + 2_000);
      // Not running yet: nothing to ask.
      expect(w.polls.size).toBe(0);
      for (const alloc of allocs) w.fake.cluster.startTask(alloc);
      await driveTo(w.clock, START + 4_000);
      expect([...w.polls.keys()].sort()).toEqual([...allocs].sort());
      expect(w.polls.has(idle!)).toBe(false);
      // Every 500 ms each: about 4 times each in those 2 s.
      for (const count of w.polls.values()) expect(count).toBeGreaterThanOrEqual(3);
      for (const alloc of allocs) w.fake.checks.setAll(alloc, 'success');
      await driveTo(w.clock, START + 8_000);
      expect(w.verdicts.filter((v) => 'healthy' in v.outcome && v.outcome.healthy)).toHaveLength(20);
      const after = [...w.polls.values()].reduce((sum, count) => sum + count, 0);
      await driveTo(w.clock, START + 12_000);
      expect([...w.polls.values()].reduce((sum, count) => sum + count, 0)).toBe(after);
    } finally {
      await w.close();
    }
  });
});

describe('NomadCheckPoller', () => {
  test('at most `concurrency` reads in flight, the next one starting as one ends; each read once per round; forget aborts its read', async () => {
    const clock = new VirtualClock({ start: START });
    const reads: { path: string; signal: AbortSignal; answer: (body: unknown) => void }[] = [];
    const nomad = {
      query: <T>(path: string, options: { signal?: AbortSignal } = {}) =>
        new Promise<{ body: T; meta: { lastIndex: number; knownLeader: boolean; lastContactMs: number } }>((resolve) => {
          reads.push({ path, signal: options.signal!, answer: (body) => resolve({ body: body as T, meta: { lastIndex: 0, knownLeader: true, lastContactMs: 0 } }) });
        }),
    };
    const told: string[] = [];
    const poller = new NomadCheckPoller(nomad, { clock, listener: (id) => told.push(id), waiting: (id) => id !== 'a-pending', concurrency: 3 });
    for (const id of ['a-1', 'a-2', 'a-3', 'a-4', 'a-5', 'a-pending']) poller.follow(id, 'default');
    clock.advance(499);
    expect(reads).toHaveLength(0);
    clock.advance(1);
    expect(reads.map((r) => r.path)).toEqual(['/v1/allocation/a-1/checks', '/v1/allocation/a-2/checks', '/v1/allocation/a-3/checks']);
    // The next round finds them still being read: nothing asked twice.
    clock.advance(500);
    expect(reads).toHaveLength(3);
    const passing = { x: { Service: 'web', Check: 'alive', Status: 'success' } };
    reads[0]!.answer(passing);
    await flush();
    expect(reads.map((r) => r.path).slice(3)).toEqual(['/v1/allocation/a-4/checks']);
    expect(told).toEqual(['a-1']);
    poller.forget('a-2');
    expect(reads[1]!.signal.aborted).toBe(true);
    poller.stop();
    expect(reads.every((r) => r.signal.aborted || r.path.endsWith('a-1/checks'))).toBe(true);
    expect(clock.pending()).toBe(0);
  });
});

describe('the answer, as views', () => {
  test('success passing, failure critical, pending left out; group checks under task ""; order fixed; junk ignored', () => {
    const result = (id: string, fields: Record<string, unknown>) => ({ ID: id, Mode: 'healthiness', Output: '', Timestamp: 1, Group: 'web.app[0]', ...fields });
    expect(
      checkViewsFromResults({
        b: result('b', { Task: 'main', Service: 'web', Check: 'alive', Status: 'failure' }),
        a: result('a', { Service: 'edge', Check: 'tcp', Status: 'success' }),
        c: result('c', { Task: 'main', Service: 'web', Check: 'ready', Status: 'pending', Mode: 'readiness' }),
        d: { nonsense: true },
      }),
    ).toEqual([
      { task: '', service: 'edge', name: 'tcp', status: 'passing' },
      { task: 'main', service: 'web', name: 'alive', status: 'critical' },
    ]);
    expect(checkViewsFromResults(null)).toEqual([]);
  });

  test("FakeNomad's 2.0 answer has Nomad's shape: one entry per check, pending until set; 404 for an unknown allocation; 1.1.2 has no such endpoint", async () => {
    const w = await world();
    try {
      const [alloc] = place(w, 'shape', [{ name: 'web', checks: [{ name: 'alive' }] }]);
      const client = new NomadClient({ address: w.fake.address }, { clock: w.clock, gzip: false });
      const { body } = await client.query<Record<string, Record<string, unknown>>>(`/v1/allocation/${alloc}/checks`);
      const [entry] = Object.values(body);
      expect(Object.keys(body)).toEqual([entry!.ID]);
      expect(entry).toEqual({
        ID: expect.stringMatching(/^[0-9a-f]{64}$/),
        Mode: 'healthiness',
        Status: 'pending',
        Output: 'nomad: waiting to run',
        Timestamp: expect.any(Number),
        Group: 'shape.app[0]',
        Task: 'main',
        Service: 'web',
        Check: 'alive',
      });
      await expect(client.query('/v1/allocation/00000000-0000-0000-0000-000000000000/checks')).rejects.toThrow(/404 \(Unknown allocation/);
      await client.close();
      const old = await FakeNomad.start({ clock: w.clock });
      const oldClient = new NomadClient({ address: old.address }, { clock: w.clock, gzip: false });
      await expect(oldClient.query(`/v1/allocation/${alloc}/checks`)).rejects.toThrow(/404/);
      await oldClient.close();
      await old.close();
    } finally {
      await w.close();
    }
  });
});
