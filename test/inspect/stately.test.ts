/**
 * Stately's inspector (`@statelyai/inspect`) plugged into a supervisor: its `inspect` (an XState
 * observer, not a function) type-checks as the supervisor's option, and it is told of every
 * allocation machine with the machine definition it draws from, then of each step.
 */
import { createInspector, type StatelyInspectionEvent } from '@statelyai/inspect';
import type { createBrowserInspector } from '@statelyai/inspect';
import type { SupervisorOptions } from '../../src/supervisor/index.js';
import { serviceJob } from '../testing/helpers.js';
import { driveTo, startHarness } from '../supervisor/support/harness.js';

const START = Date.UTC(2026, 10, 29, 18);

// Type-level: what Stately's browser inspector hands out is accepted as it is.
export const acceptsBrowserInspector = (inspector: ReturnType<typeof createBrowserInspector>): SupervisorOptions['inspect'] => inspector.inspect;

/** Stately's inspector converts events on a zero-delay timer of its own: let those run. */
const stately = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

test('Stately\'s inspector is told of each allocation machine, with its definition, and of every step to its verdict', async () => {
  const received: StatelyInspectionEvent[] = [];
  const inspector = createInspector({ send: (event) => received.push(event) });
  const harness = await startHarness(START, { inspect: inspector.inspect });
  try {
    const { cluster } = harness.fake;
    cluster.registerJob(serviceJob('web', { TaskGroups: [{ Name: 'app', Count: 2, Tasks: [{ Name: 'main', Driver: 'raw_exec', Config: { command: '/bin/sh' } }] }] }));
    const allocations = cluster.placeAllocations('web');
    await driveTo(harness.clock, START + 500);
    for (const alloc of allocations) cluster.startTask(alloc.ID, 'main');
    await driveTo(harness.clock, START + 5_000);
    expect(harness.verdicts.map((record) => record.outcome)).toEqual([expect.objectContaining({ healthy: true }), expect.objectContaining({ healthy: true })]);
    await stately();

    for (const alloc of allocations) {
      const own = received.filter((event) => event.sessionId === alloc.ID);
      const actor = own.find((event) => event.type === '@xstate.actor');
      expect(actor).toMatchObject({ name: 'allocationHealth', rootId: alloc.ID, parentId: undefined });
      const definition = JSON.parse((actor as { definition: string }).definition) as { id: string; initial: string; states: Record<string, unknown> };
      expect(definition).toMatchObject({ id: 'allocationHealth', initial: 'pending' });
      // (Stately's serialiser sorts keys.)
      expect(Object.keys(definition.states).sort()).toEqual(['disconnected', 'healthy', 'minHealthyWait', 'pending', 'running', 'stopped', 'unhealthy']);
      const snapshots = own.filter((event) => event.type === '@xstate.snapshot').map((event) => event.snapshot as unknown as { value: string; status: string });
      expect(snapshots[0]).toMatchObject({ value: 'pending', status: 'active' });
      expect(snapshots.at(-1)).toMatchObject({ value: 'healthy', status: 'done' });
      expect(snapshots.map((snapshot) => snapshot.value)).toContain('minHealthyWait');
      const events = own.filter((event) => event.type === '@xstate.event').map((event) => event.event.type);
      expect(events[0]).toBe('xstate.init');
      expect(events.slice(1).every((type) => type === 'observe')).toBe(true);
      // The actor is announced before anything else about it.
      expect(own[0]).toBe(actor);
    }
    // The supervisor's own actor still reaches it too.
    expect(received.some((event) => event.type === '@xstate.actor' && event.name === 'supervisor')).toBe(true);
  } finally {
    await harness.close();
  }
});
