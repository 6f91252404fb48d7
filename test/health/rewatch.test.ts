/**
 * An allocation that an in-place update moves into a new deployment is watched again, as Nomad's
 * client does (health_hook.go Update: health cleared, a new deadline and a new tracker from the
 * update; tracker.go starts min_healthy_time when it first sees every task running): the window
 * starts no earlier than the re-watch, the deadline counts from it.
 */
import { allocationView } from '../../src/health/index.js';
import type { Allocation, TaskGroup } from '../../src/nomad/types.js';
import { T0, exited, harness, policy, running, task, view } from './support/builders.js';

/** Tasks started at T0; the in-place update moved the allocation at T0 + 60 s, seen 100 ms later. */
const MOVED = T0 + 60_000;

function rewatched(tasks = { web: running(T0) }) {
  const h = harness();
  h.clock.advanceTo(MOVED + 100);
  h.registry.track('a', policy(), { ...view(tasks), watchingSince: MOVED });
  return h;
}

describe('re-watch after an in-place update', () => {
  it('running since long before: healthy min_healthy_time after the re-watch, not at once', () => {
    const { clock, registry } = rewatched();
    expect(registry.status('a')?.state).toBe('minHealthyWait');
    clock.advanceTo(MOVED + 1999);
    expect(registry.status('a')?.outcome).toBeNull();
    clock.advance(1);
    expect(registry.status('a')?.outcome).toEqual({ healthy: true, at: MOVED + 2000, reasons: {} });
  });

  it('a task restarted after the re-watch: the window starts at its new start', () => {
    const { clock, registry } = rewatched();
    clock.advanceTo(MOVED + 500);
    registry.updateAllocation('a', view({ web: running(MOVED + 400, { restarts: 1 }) }));
    clock.advanceTo(MOVED + 2399);
    expect(registry.status('a')?.outcome).toBeNull();
    clock.advance(1);
    expect(registry.status('a')?.outcome).toEqual({ healthy: true, at: MOVED + 2400, reasons: {} });
  });

  it('a task failing after the re-watch: unhealthy at its FinishedAt', () => {
    const { clock, registry } = rewatched();
    clock.advanceTo(MOVED + 800);
    registry.updateAllocation('a', view({ web: exited(T0, MOVED + 700, { failed: true }) }, { clientStatus: 'failed' }));
    expect(registry.status('a')?.outcome).toEqual({ healthy: false, at: MOVED + 700, reasons: { web: 'Unhealthy because of failed task' } });
  });

  it('the healthy deadline counts from the re-watch', () => {
    const { clock, registry } = rewatched();
    clock.advanceTo(MOVED + 1000);
    registry.updateAllocation('a', view({ web: task({ restarts: 1 }) }));
    clock.advanceTo(MOVED + 4999);
    expect(registry.status('a')?.state).toBe('pending');
    clock.advance(1);
    expect(registry.status('a')?.outcome).toEqual({ healthy: false, at: MOVED + 5000, reasons: { web: 'Task not running by healthy_deadline of 5s' } });
  });

  it('a fresh allocation (watching from before its tasks started) keeps its verdict at StartedAt + min_healthy_time', () => {
    const { clock, registry } = harness();
    clock.advance(700);
    registry.track('a', policy(), { ...view({ web: running(T0 + 300) }), watchingSince: T0 + 10 });
    clock.advanceTo(T0 + 3000);
    expect(registry.status('a')?.outcome).toEqual({ healthy: true, at: T0 + 2300, reasons: {} });
  });

  it('no watching start in the data: the first sight is no bound on the window (the data may come after the start)', () => {
    const { clock, registry } = harness();
    clock.advance(300);
    registry.track('a', policy(), view({ web: running(T0 + 100) }));
    clock.advanceTo(T0 + 3000);
    expect(registry.status('a')?.outcome).toEqual({ healthy: true, at: T0 + 2100, reasons: {} });
  });
});

describe('allocationView with rewatchedBy', () => {
  const group = { Name: 'app', Tasks: [{ Name: 'web' }] } as unknown as TaskGroup;
  const received = { Type: 'Received', Time: 1_795_971_600_000_000_000n };
  const allocation = {
    ID: 'a', ClientStatus: 'running', DesiredStatus: 'run', CreateTime: 1_795_971_600_000_000_000n,
    TaskStates: { web: { State: 'running', Failed: false, Restarts: 0, StartedAt: '2026-11-29T17:00:01Z', FinishedAt: null, Events: [received] } },
  } as unknown as Allocation;

  it("watching began at the moving update's ModifyTime (exact nanoseconds), not at Received", () => {
    expect(allocationView(allocation, group).view.watchingSince).toBe(1_795_971_600_000);
    const moved = allocationView(allocation, group, { rewatchedBy: { ModifyTime: 1_795_971_660_123_456_789n } });
    expect(moved).toMatchObject({ view: { watchingSince: 1_795_971_660_123.456 }, problems: [] });
  });

  it('an unreadable ModifyTime is reported and leaves the start unknown (the deadline then counts from the first sight)', () => {
    const moved = allocationView(allocation, group, { rewatchedBy: { ModifyTime: 'yesterday' as never } });
    expect(moved.view.watchingSince).toBeUndefined();
    expect(moved.problems).toEqual([expect.stringMatching(/^ModifyTime ignored, time "yesterday" is not a Unix time in nanoseconds$/)]);
  });
});
