/**
 * Allocation machines are stored snapshots, not actors: with an inspector given, the registry
 * emits what an actor of the health machine would (checked against a real actor fed the same
 * events), with one actor ref-like identity per allocation whose `logic` is the machine; without
 * one, nothing is emitted.
 */
import { createActor, type InspectionEvent } from 'xstate';
import { allocationHealthMachine } from '../../machines/allocationHealth.js';
import type { AllocationHealthEvent } from '../../machines/allocationHealthTypes.js';
import { VirtualClock } from '../../src/clock/index.js';
import { HealthRegistry } from '../../src/health/index.js';
import { T0, policy, running, task, view } from './support/builders.js';

type Seen = Extract<InspectionEvent, { type: '@xstate.actor' | '@xstate.event' | '@xstate.snapshot' }>;

function announced(events: InspectionEvent[]): Seen[] {
  return events.filter((event): event is Seen => ['@xstate.actor', '@xstate.event', '@xstate.snapshot'].includes(event.type));
}

/** What an inspector can tell from an event, without object identities. */
function described(event: Seen): unknown {
  if (event.type === '@xstate.actor') return { type: event.type };
  if (event.type === '@xstate.event') return { type: event.type, event: event.event, source: event.sourceRef };
  const snapshot = event.snapshot as unknown as { value: unknown; context: unknown; status: string; output?: unknown };
  return { type: event.type, event: event.event, value: snapshot.value, context: snapshot.context, status: snapshot.status, output: snapshot.output };
}

test('the registry announces an allocation and its steps as an actor of the health machine would', () => {
  const clock = new VirtualClock({ start: T0 });
  const fromRegistry: InspectionEvent[] = [];
  const registry = new HealthRegistry({ clock, inspect: (event) => fromRegistry.push(event) });
  const first = view({ web: task() }, { clientStatus: 'pending' });
  registry.track('alloc-1', policy(), first);
  clock.advance(100);
  const started = view({ web: running(T0 + 80) });
  registry.updateAllocation('alloc-1', started);
  clock.advance(5_000);
  expect(registry.status('alloc-1')?.state).toBe('healthy');

  // A real actor fed the same events.
  const fromActor: InspectionEvent[] = [];
  const actor = createActor(allocationHealthMachine, { input: { policy: policy(), now: T0, watchingSince: undefined }, inspect: (event) => fromActor.push(event) });
  actor.start();
  const sent: AllocationHealthEvent[] = [
    { type: 'observe', view: first, now: T0 },
    { type: 'observe', view: started, now: T0 + 100 },
    // The timer the registry armed at min_healthy_time after the start.
    { type: 'observe', now: T0 + 2_080 },
  ];
  for (const event of sent) actor.send(event);

  const ours = announced(fromRegistry);
  const theirs = announced(fromActor).filter((event) => event.actorRef === actor);
  expect(ours.map(described)).toEqual(theirs.map(described));
  expect(ours.map((event) => event.type)).toEqual([
    '@xstate.actor',
    ...Array.from({ length: 4 }, () => ['@xstate.event', '@xstate.snapshot']).flat(),
  ]);
  // One identity for the allocation's whole life, a root whose logic is the machine.
  const ref = ours[0]!.actorRef;
  expect(ours.every((event) => event.actorRef === ref && event.rootId === 'alloc-1')).toBe(true);
  expect(ref).toMatchObject({ id: 'alloc-1', sessionId: 'alloc-1', logic: allocationHealthMachine, _parent: undefined });
  expect((ref as unknown as { logic: { config: { id: string } } }).logic.config.id).toBe('allocationHealth');
});

test('the ref reads the live snapshot; tracking again after a drop is announced again under the same identity', () => {
  const clock = new VirtualClock({ start: T0 });
  const events: InspectionEvent[] = [];
  const registry = new HealthRegistry({ clock, inspect: { next: (event) => events.push(event) } });
  registry.track('a', policy(), view({ web: task() }));
  const ref = events[0]!.actorRef;
  registry.updateAllocation('a', view({ web: running(T0) }));
  expect(ref.getSnapshot()).toBe(registry.snapshot('a'));
  expect((ref.getSnapshot() as { value: string }).value).toBe('minHealthyWait');
  registry.drop('a');
  expect(ref.getSnapshot()).toBeUndefined();
  const before = events.length;
  registry.track('a', policy(), view({ web: task() }));
  const again = announced(events.slice(before));
  expect(again[0]).toMatchObject({ type: '@xstate.actor', rootId: 'a', actorRef: { sessionId: 'a' } });
  expect(again[0]!.actorRef).not.toBe(ref);
});

test('allocations have distinct identities, and an observer without next, or none, is never called', () => {
  const clock = new VirtualClock({ start: T0 });
  const events: InspectionEvent[] = [];
  const registry = new HealthRegistry({ clock, inspect: (event) => events.push(event) });
  registry.track('a', policy(), view({ web: task() }));
  registry.track('b', policy(), view({ web: task() }));
  const refs = new Set(events.map((event) => event.actorRef));
  expect([...refs].map((ref) => ref.sessionId)).toEqual(['a', 'b']);

  const silent = new HealthRegistry({ clock, inspect: { error: () => undefined } });
  silent.track('a', policy(), view({ web: running(T0) }));
  clock.advance(10_000);
  expect(silent.status('a')?.state).toBe('healthy');
});
