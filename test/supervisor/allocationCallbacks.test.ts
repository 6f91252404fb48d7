import { join } from 'node:path';
import { VirtualClock } from '../../src/clock/index.js';
import type { Allocation } from '../../src/nomad/types.js';
import { nanoTimeToMs } from '../../src/health/nomadTime.js';
import { RunnerAllocationTracker } from '../../src/runners/allocationCallbacks.js';
import { parseLossless } from '../../src/testing/losslessJson.js';
import { isHeartbeatLine, readScenario } from '../../src/testing/recording.js';

const scenarios = join(__dirname, '..', 'fixtures', 'nomad-1.1.2', 'scenarios');

interface Call {
  kind: 'new' | 'deleted' | 'failed';
  id: string;
  at: number;
  startupMs?: number;
  message?: string;
}

/** Replays a scenario's Allocation events into a tracker on a VirtualClock at the recorded times. */
function replay(name: string, since?: (opened: number) => number) {
  const scenario = readScenario(join(scenarios, name));
  const opened = Date.parse(scenario.meta.stream_opened_at);
  const clock = new VirtualClock({ start: opened });
  const calls: Call[] = [];
  const allocations = new Map<string, Allocation[]>();
  const tracker = new RunnerAllocationTracker(
    {
      onNew: (alloc, startupMs) => calls.push({ kind: 'new', id: alloc.ID, at: clock.now(), startupMs }),
      onDeleted: (alloc) => calls.push({ kind: 'deleted', id: alloc.ID, at: clock.now() }),
      onFailed: (alloc, message) => calls.push({ kind: 'failed', id: alloc.ID, at: clock.now(), message }),
    },
    { clock, ...(since ? { since: since(opened) } : {}) },
  );
  for (const line of scenario.stream) {
    if (isHeartbeatLine(line)) continue;
    clock.advanceTo(opened + line.t);
    const batch = parseLossless(line.raw) as unknown as { Events: { Topic: string; Payload: { Allocation?: Allocation } }[] };
    for (const event of batch.Events) {
      const alloc = event.Payload.Allocation;
      if (event.Topic !== 'Allocation' || !alloc) continue;
      allocations.set(alloc.ID, [...(allocations.get(alloc.ID) ?? []), alloc]);
      tracker.handle(alloc);
    }
  }
  return { calls, allocations, tracker, opened };
}

describe('runner allocation callbacks (Poseidon WatchEventStream semantics)', () => {
  test('healthy_task_states: onNew once per allocation when it runs, with its startup time; onDeleted once when the stop arrives', () => {
    const { calls, allocations, tracker } = replay('healthy_task_states');
    const news = calls.filter((c) => c.kind === 'new');
    expect(news).toHaveLength(2);
    expect(new Set(news.map((c) => c.id)).size).toBe(2);
    for (const call of news) {
      const updates = allocations.get(call.id)!;
      // Startup measured on the clock from the first pending update seen to the running one.
      expect(call.startupMs).toBeGreaterThan(0);
      expect(call.startupMs).toBeLessThan(5_000);
      expect(updates[0]!.ClientStatus).toBe('pending');
    }
    const deleted = calls.filter((c) => c.kind === 'deleted');
    expect(deleted.map((c) => c.id).sort()).toEqual(news.map((c) => c.id).sort());
    for (const call of deleted) {
      expect(call.at).toBeGreaterThan(news.find((n) => n.id === call.id)!.at);
    }
    expect(calls.filter((c) => c.kind === 'failed')).toEqual([]);
    expect(tracker.size).toBe(0);
  });

  test('failed_task: the failure is reported once, with the event that went wrong and the one that failed the task', () => {
    const { calls, allocations } = replay('failed_task');
    const failed = calls.filter((c) => c.kind === 'failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]!.message).toBe('main: Exit Code: 1 (Policy allows no restarts)');
    // Nomad repeated the failed allocation in later updates; none of them reported it again.
    expect(allocations.get(failed[0]!.id)!.filter((a) => a.ClientStatus === 'failed').length).toBeGreaterThan(1);
    expect(calls.filter((c) => c.kind === 'new')).toEqual([]);
  });

  test('rolling_update: every version-0 runner is deleted when its stop arrives, every replacement is announced', () => {
    const { calls } = replay('rolling_update');
    const news = calls.filter((c) => c.kind === 'new');
    const deleted = calls.filter((c) => c.kind === 'deleted');
    expect(news).toHaveLength(6);
    expect(new Set(deleted.map((c) => c.id))).toEqual(new Set(news.map((c) => c.id)));
    expect(deleted).toHaveLength(6);
  });

  test('updates modified before the subscription started are ignored', () => {
    const { calls } = replay('healthy_task_states', () => Number.MAX_SAFE_INTEGER);
    expect(calls).toEqual([]);
  });

  test('a subscription that starts after an allocation was placed does not follow it (its pending update is older)', () => {
    const all = replay('failed_task');
    const placed = [...all.allocations.values()].flat().find((a) => a.ClientStatus === 'pending')!;
    const later = replay('failed_task', () => nanoTimeToMs(placed.ModifyTime!) + 1);
    expect(later.calls).toEqual([]);
    expect(all.calls).toHaveLength(1);
  });

  test('nanosecond times become epoch milliseconds, exact or rounded', () => {
    expect(nanoTimeToMs(1795971905982677010n)).toBe(1795971905982);
    expect(nanoTimeToMs(Number(1795971905982677010n))).toBeCloseTo(1795971905982.677, 0);
  });
});
