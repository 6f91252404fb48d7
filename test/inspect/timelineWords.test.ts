/**
 * What a timeline says of each kind of step, read from a registry's inspection events: checks
 * registered and changing, an update the machine ignored, and the healthy deadline's timer.
 */
import type { InspectionEvent } from 'xstate';
import type { AllocationHealthState } from '../../machines/allocationHealth.js';
import type { AllocationHealthContext } from '../../machines/allocationHealthTypes.js';
import { VirtualClock } from '../../src/clock/index.js';
import { HealthRegistry } from '../../src/health/index.js';
import { AllocationTimeline } from '../../src/inspect/timeline.js';
import { T0, check, policy, running, task, view } from '../health/support/builders.js';

function followed(limit = 50): { clock: VirtualClock; registry: HealthRegistry; timeline: AllocationTimeline } {
  const clock = new VirtualClock({ start: T0 });
  const timeline = new AllocationTimeline(limit);
  const record = (event: InspectionEvent): void => {
    if (event.type !== '@xstate.snapshot') return;
    const snapshot = event.snapshot as unknown as { value: AllocationHealthState; context: AllocationHealthContext };
    timeline.record(event.event, snapshot.value, snapshot.context);
  };
  return { clock, registry: new HealthRegistry({ clock, inspect: record }), timeline };
}

test('checks: registered, changing status, deregistered; each a step of its own', () => {
  const { clock, registry, timeline } = followed();
  const checks = [check('alive'), check('ready')];
  registry.track('a', policy({ useChecks: true, expectedChecks: checks }), view({ web: running(T0) }));
  clock.advance(100);
  registry.updateChecks('a', [{ task: 'web', service: 'web', name: 'alive', status: 'passing' }]);
  clock.advance(100);
  registry.updateChecks('a', [
    { task: 'web', service: 'web', name: 'alive', status: 'critical' },
    { task: 'web', service: 'web', name: 'ready', status: 'passing' },
  ]);
  clock.advance(100);
  registry.updateChecks('a', [{ task: 'web', service: 'web', name: 'ready', status: 'passing' }]);
  const entries = timeline.info('a').entries.slice(1);
  expect(entries.map((entry) => [entry.cause, entry.changes])).toEqual([
    ['checks', ['check web/web/alive registered: passing']],
    ['checks', ['check web/web/alive: passing → critical', 'check web/web/ready registered: passing']],
    ['checks', ['check web/web/alive deregistered']],
  ]);
  expect(timeline.info('a').entries[0]!.changes.at(-1)).toBe('judged by checks: min_healthy_time 2s, healthy_deadline 5s');
});

test('an update the machine ignores says why; the deadline timer says which deadline; a failed task says so', () => {
  const { clock, registry, timeline } = followed();
  registry.track('a', policy(), view({ web: task(), side: task({ hook: 'poststart', sidecar: true }) }));
  expect(timeline.info('a').entries[0]!.changes).toContain('task side (poststart sidecar): pending');
  clock.advance(100);
  registry.updateAllocation('a', view({ web: task({ startedAt: Number.NaN, state: 'running' }) }));
  const ignored = timeline.info('a').entries.at(-1)!;
  expect(ignored.cause).toBe('allocation');
  expect(ignored.changes.at(-1)).toMatch(/^update ignored: /);
  clock.advance(10_000);
  expect(timeline.info('a').entries.at(-1)).toMatchObject({ cause: 'timer', changes: ['healthy_deadline of 5s passed'], state: 'unhealthy', move: { from: 'pending', to: 'unhealthy' } });

  const other = followed();
  other.registry.track('b', policy(), view({ web: running(T0) }));
  other.clock.advance(100);
  other.registry.updateAllocation('b', view({ web: task({ state: 'dead', failed: true, startedAt: T0, finishedAt: T0 + 90 }) }));
  expect(other.timeline.info('b').entries.at(-1)).toMatchObject({ changes: ['task web: running → dead (failed)'], state: 'unhealthy' });
});

test('past its limit a timeline lets the oldest steps go and counts them', () => {
  const { clock, registry, timeline } = followed(2);
  registry.track('a', policy(), view({ web: task() }));
  for (let i = 1; i <= 4; i++) {
    clock.advance(10);
    registry.updateAllocation('a', view({ web: running(T0, { restarts: i }) }));
  }
  const info = timeline.info('a');
  expect(info.entries.map((entry) => entry.seq)).toEqual([4, 5]);
  expect(info.dropped).toBe(3);
  expect(info.entries.at(-1)!.changes).toEqual(['task web restarted (4 restarts)']);
});
