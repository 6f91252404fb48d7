/**
 * The many-allocation runtime: one stored snapshot and at most one clock timer per allocation,
 * updates that change nothing never reach the machine, changes and verdicts go to subscribers,
 * an inspection observer sees every step, and bad input never throws out of a step or wedges it.
 */
import type { InspectionEvent } from 'xstate';
import { VirtualClock } from '../../src/clock/index.js';
import { HealthInputError, HealthRegistry, allocationView, type AllocationView, type CheckView } from '../../src/health/index.js';
import type { Allocation, TaskGroup } from '../../src/nomad/types.js';
import { T0, check, harness, policy, running, task, view } from './support/builders.js';

describe('HealthRegistry', () => {
  it('announces every transition with its clock time, then the outcome', () => {
    const { clock, registry, changes } = harness();
    registry.track('a', policy(), view({ web: task() }, { clientStatus: 'pending' }));
    clock.advance(100);
    registry.updateAllocation('a', view({ web: running(T0 + 80) }));
    clock.advance(5000);
    expect(changes).toEqual([
      { type: 'transition', allocationId: 'a', from: 'pending', to: 'minHealthyWait', at: T0 + 100 },
      { type: 'transition', allocationId: 'a', from: 'minHealthyWait', to: 'healthy', at: T0 + 2080 },
      { type: 'outcome', allocationId: 'a', outcome: { healthy: true, at: T0 + 2080, reasons: {} } },
    ]);
  });

  it('keeps one timer however many allocations wait, and none once none does', () => {
    const { clock, registry } = harness();
    for (const id of ['a', 'b', 'c']) registry.track(id, policy(), view({ web: task() }));
    expect(clock.pending()).toBe(1);
    registry.updateAllocation('a', view({ web: running(T0) }));
    expect(clock.pending()).toBe(1);
    clock.advance(2000);
    expect(registry.status('a')?.state).toBe('healthy');
    // b and c wait for their deadline.
    expect(clock.pending()).toBe(1);
    registry.drop('b');
    expect(clock.pending()).toBe(1);
    registry.drop('c');
    expect(clock.pending()).toBe(0);
  });

  it('an update that does not change the compact view is not sent to the machine', () => {
    const inspected: InspectionEvent[] = [];
    const registry = new HealthRegistry({ clock: new VirtualClock({ start: T0 }), inspect: (event) => inspected.push(event) });
    const first = view({ web: running(T0) });
    registry.track('a', policy(), first);
    const count = inspected.length;
    expect(registry.updateAllocation('a', { ...first, tasks: { web: running(T0) } })).toBe(false);
    expect(inspected).toHaveLength(count);
    expect(registry.updateAllocation('a', view({ web: running(T0, { restarts: 1 }) }))).toBe(true);
    expect(inspected.length).toBeGreaterThan(count);
  });

  it('passes inspection events with an actor ref per allocation (test/health/inspection.test.ts has the rest)', () => {
    const inspected: InspectionEvent[] = [];
    const registry = new HealthRegistry({ clock: new VirtualClock({ start: T0 }), inspect: { next: (event) => inspected.push(event) } });
    registry.track('alloc-1', policy(), view({ web: running(T0) }));
    expect(inspected.map((event) => event.type)).toEqual(['@xstate.actor', '@xstate.event', '@xstate.snapshot', '@xstate.event', '@xstate.snapshot']);
    const snapshotEvent = inspected[4] as Extract<InspectionEvent, { type: '@xstate.snapshot' }>;
    expect(snapshotEvent.rootId).toBe('alloc-1');
    expect(snapshotEvent.actorRef.sessionId).toBe('alloc-1');
    expect(snapshotEvent.actorRef.getSnapshot()).toBe(registry.snapshot('alloc-1'));
    // Events sent through the inspected ref take the same path as the API.
    snapshotEvent.actorRef.send({ type: 'observe', view: view({ web: running(T0) }, { desiredStatus: 'stop' }), now: 0 });
    expect(registry.status('alloc-1')?.state).toBe('stopped');
  });

  it('drop forgets the allocation and cancels its timer; the id can be tracked again', () => {
    const { clock, registry, changes } = harness();
    registry.track('a', policy(), view({ web: running(T0) }));
    expect(registry.drop('a')).toBe(true);
    expect(registry.drop('a')).toBe(false);
    expect(clock.pending()).toBe(0);
    expect(registry.status('a')).toBeUndefined();
    clock.advance(10_000);
    expect(changes.filter((change) => change.type === 'outcome')).toEqual([]);
    registry.track('a', policy(), view({ web: task() }));
    expect(registry.status('a')?.state).toBe('pending');
  });

  it('tracking returns the status the history reached, also when a listener drops the allocation on its verdict', () => {
    const { registry } = harness();
    registry.subscribe((change) => {
      if (change.type === 'outcome') registry.drop(change.allocationId);
    });
    const status = registry.track('a', policy(), view({ web: task({ state: 'dead', failed: true, finishedAt: T0 }) }, { clientStatus: 'failed' }));
    expect(status).toMatchObject({ state: 'unhealthy', outcome: { healthy: false } });
    expect(registry.status('a')).toBeUndefined();
  });

  it('tracking a known id again only updates its view (the deadline keeps counting from the first)', () => {
    const { clock, registry } = harness();
    registry.track('a', policy(), view({ web: task() }));
    clock.advance(4000);
    registry.track('a', policy({ healthyDeadlineMs: 60_000 }), view({ web: running(T0 + 4000) }));
    clock.advance(1000);
    expect(registry.status('a')?.outcome).toMatchObject({ healthy: false, at: T0 + 5000 });
  });

  it('an allocation first seen 4 s after it was received, with a 5 s healthy_deadline, is unhealthy 1 s later, not 5 s', () => {
    const { clock, registry } = harness();
    const group: TaskGroup = { Name: 'app', Tasks: [{ Name: 'web', Driver: 'raw_exec' }] };
    const nanos = (ms: number): bigint => BigInt(ms) * 1_000_000n;
    const allocation: Allocation = {
      ID: 'a',
      JobID: 'j',
      TaskGroup: 'app',
      ModifyIndex: 7,
      ClientStatus: 'pending',
      DesiredStatus: 'run',
      CreateTime: nanos(T0 - 30),
      TaskStates: {
        web: {
          State: 'pending', Failed: false, Restarts: 0, LastRestart: null, StartedAt: null, FinishedAt: null,
          Events: [{ Type: 'Received', Time: nanos(T0) }, { Type: 'Task Setup', Time: nanos(T0 + 2) }],
        },
      },
    };
    clock.advance(4000);
    registry.track('a', policy({ healthyDeadlineMs: 5000 }), allocationView(allocation, group).view);
    clock.advance(999);
    expect(registry.status('a')?.state).toBe('pending');
    clock.advance(1);
    expect(registry.status('a')?.outcome).toEqual({ healthy: false, at: T0 + 5000, reasons: { web: 'Task not running by healthy_deadline of 5s' } });
  });

  it('updates for unknown allocations are refused, not thrown', () => {
    const { registry } = harness();
    expect(registry.updateAllocation('nope', view({}))).toBe(false);
    expect(registry.updateChecks('nope', [])).toBe(false);
  });

  it('allocations of one group share one policy object rather than copies', () => {
    const { registry } = harness();
    const shared = policy();
    registry.track('a', shared, view({ web: task() }));
    registry.track('b', shared, view({ web: task() }));
    expect(registry.snapshot('a')?.context.policy).toBe(registry.snapshot('b')?.context.policy);
  });
});

describe('bad input', () => {
  const malformedViews: [string, unknown][] = [
    ['null', null],
    ['no tasks', { clientStatus: 'running', desiredStatus: 'run' }],
    ['a task with an unknown state', { clientStatus: 'running', desiredStatus: 'run', tasks: { web: { ...task(), state: 'zombie' } } }],
    ['a task with a string time', { clientStatus: 'running', desiredStatus: 'run', tasks: { web: { ...task(), startedAt: 'noon' } } }],
    ['a numeric status', { clientStatus: 3, desiredStatus: 'run', tasks: {} }],
  ];

  it.each(malformedViews)('a view with %s is rejected with a reason; the allocation is not stuck', (_case, bad) => {
    const { clock, registry } = harness();
    registry.track('a', policy(), view({ web: task() }));
    expect(() => registry.updateAllocation('a', bad as AllocationView)).not.toThrow();
    expect(registry.status('a')).toMatchObject({ state: 'pending', rejected: expect.any(String) });
    registry.updateAllocation('a', view({ web: running(T0) }));
    expect(registry.status('a')?.rejected).toBeNull();
    clock.advance(2000);
    expect(registry.status('a')?.state).toBe('healthy');
  });

  it('malformed checks are rejected with a reason', () => {
    const { registry } = harness();
    registry.track('a', policy({ useChecks: true }), view({ web: running(T0) }));
    registry.updateChecks('a', [{ task: 'web', service: 'web', name: 'c', status: 'sort-of' }] as unknown as CheckView[]);
    expect(registry.status('a')?.rejected).toBe('check c: unknown status sort-of');
    registry.updateChecks('a', 'all good' as unknown as CheckView[]);
    expect(registry.status('a')?.rejected).toBe('checks is not an array');
  });

  describe("sampled checks (Consul's): counted from Nomad's next look, every 500 ms from when it began watching", () => {
    const checked = policy({ useChecks: true, expectedChecks: [check('alive')], healthyDeadlineMs: 30_000 });
    const alive = (status: CheckView['status']): CheckView[] => [{ task: 'web', service: 'web', name: 'alive', status }];
    /** Watched since T0 - 120 (its looks at T0 + 380, T0 + 880, …), its task running since T0. */
    function tracked(): ReturnType<typeof harness> {
      const h = harness();
      h.registry.track('a', checked, { ...view({ web: running(T0) }), watchingSince: T0 - 120 });
      return h;
    }

    it('a check passing at T0 + 1000 counts from the look at T0 + 1380: healthy then + min_healthy_time', () => {
      const { clock, registry, changes } = tracked();
      clock.advance(1000);
      expect(registry.updateChecks('a', alive('passing'), { sampled: true })).toBe(true);
      expect(registry.status('a')?.state).toBe('running');
      clock.advance(380);
      expect(registry.status('a')?.state).toBe('minHealthyWait');
      clock.advance(5000);
      expect(changes.at(-1)).toEqual({ type: 'outcome', allocationId: 'a', outcome: { healthy: true, at: T0 + 3380, reasons: {} } });
    });

    it('a state replaced before the next look is never seen, as Nomad would not see it', () => {
      const { clock, registry } = tracked();
      clock.advance(1000);
      registry.updateChecks('a', alive('passing'), { sampled: true });
      clock.advance(1000);
      // Passing since the look at T0 + 1380; critical for 300 ms between two looks, then passing again.
      registry.updateChecks('a', alive('critical'), { sampled: true });
      clock.advance(300);
      expect(registry.updateChecks('a', alive('passing'), { sampled: true })).toBe(true);
      clock.advance(1080);
      expect(registry.status('a')?.outcome).toEqual({ healthy: true, at: T0 + 3380, reasons: {} });
    });

    it('checks count from when their answer arrived (seenAt), not from when they are handed over: a replay gives the same look', () => {
      const { clock, registry } = tracked();
      clock.advance(1390);
      // Arrived 10 ms before the look at T0 + 1380, handed over 10 ms after it.
      registry.updateChecks('a', alive('passing'), { sampled: true, seenAt: T0 + 1370 });
      clock.advance(2000);
      expect(registry.status('a')?.outcome).toEqual({ healthy: true, at: T0 + 3380, reasons: {} });
    });

    it('a failure a look sees resets the window; unsampled checks count from when they are seen', () => {
      const { clock, registry } = tracked();
      registry.updateChecks('a', alive('passing'), { sampled: true });
      clock.advance(2000);
      registry.updateChecks('a', alive('critical'), { sampled: true });
      clock.advance(600);
      registry.updateChecks('a', alive('passing'));
      clock.advance(1999);
      expect(registry.status('a')?.state).toBe('minHealthyWait');
      clock.advance(1);
      expect(registry.status('a')?.outcome).toEqual({ healthy: true, at: T0 + 4600, reasons: {} });
    });
  });

  it('a malformed policy or first view is a HealthInputError naming the allocation', () => {
    const { registry } = harness();
    expect(() => registry.track('a', { ...policy(), minHealthyTimeMs: -5 }, view({}))).toThrow(HealthInputError);
    expect(() => registry.track('b', policy(), { tasks: {} } as unknown as AllocationView)).toThrow(/allocation b: .*clientStatus/);
    expect(registry.size).toBe(0);
  });

  it('unknown statuses are not guessed at: an unknown desired status keeps judging', () => {
    const { clock, registry } = harness();
    registry.track('a', policy(), view({ web: running(T0) }, { desiredStatus: 'ponder', clientStatus: 'mystery' }));
    clock.advance(2000);
    expect(registry.status('a')?.state).toBe('healthy');
  });
});
