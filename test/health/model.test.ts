/**
 * Model-based: @xstate/graph walks the health machine itself (it has no `after`: time is an event),
 * over a finite alphabet of allocation updates and time steps, and every generated path is then
 * replayed on the real runtime (HealthRegistry on a VirtualClock, time steps mapped to
 * clock.advanceTo). On every step of every path:
 *   - the runtime is in the state the path says;
 *   - a final state is never left, and its outcome never changes;
 *   - healthy never comes before min_healthy_time after the latest start, nor after the deadline;
 *   - stopped never carries a verdict.
 */
import { createTestModel } from '@xstate/graph';
import { allocationHealthMachine } from '../../machines/allocationHealth.js';
import type {
  AllocationHealthEvent,
  AllocationView,
  CheckView,
  HealthOutcome,
  HealthPolicy,
  TaskView,
} from '../../machines/allocationHealthTypes.js';
import type { AllocationHealthSnapshot } from '../../src/health/machineStepper.js';
import { T0, check, harness, policy, task, view } from './support/builders.js';

const STEP_MS = 1000;
const FINAL = new Set(['healthy', 'unhealthy', 'stopped']);

interface Variant {
  readonly name: string;
  /** The chart's states this variant can reach. */
  readonly reaches: readonly string[];
  readonly policy: HealthPolicy;
  /** The allocation as first seen. */
  readonly placed: AllocationView;
  /** The updates that may happen next, given the current snapshot. */
  readonly next: (snapshot: AllocationHealthSnapshot) => AllocationHealthEvent[];
}

/** Main tasks may restart twice; lifecycle tasks only start and end, to keep the graph small. */
function taskMoves(name: string, current: TaskView, now: number): Record<string, TaskView>[] {
  if (current.state === 'pending') return [{ [name]: { ...current, state: 'running', startedAt: now, finishedAt: null } }];
  if (current.state !== 'running') return [];
  return [
    ...(current.hook === null && current.restarts < 2 ? [{ [name]: { ...current, state: 'pending' as const, restarts: current.restarts + 1 } }] : []),
    { [name]: { ...current, state: 'dead', failed: true, finishedAt: now } },
    { [name]: { ...current, state: 'dead', finishedAt: now } },
  ];
}

function allocationMoves(context: AllocationHealthSnapshot['context']): AllocationHealthEvent[] {
  const { view: current, now } = context;
  const update = (changes: Partial<AllocationView>): AllocationHealthEvent => ({ type: 'observe', view: { ...current, ...changes }, now });
  const events: AllocationHealthEvent[] = [];
  for (const [name, state] of Object.entries(current.tasks)) {
    for (const moved of taskMoves(name, state, now)) events.push(update({ tasks: { ...current.tasks, ...moved } }));
  }
  events.push(update({ desiredStatus: 'stop' }), update({ clientStatus: 'failed' }));
  // Time moves in whole steps until a little past the deadline.
  if (now <= context.deadlineAt) events.push({ type: 'observe', now: now + STEP_MS });
  return events;
}

const passingChecks: CheckView[] = [{ task: 'main', service: 'web', name: 'alive', status: 'passing' }];
const failingChecks: CheckView[] = [{ task: 'main', service: 'web', name: 'alive', status: 'critical' }];

const variants: Variant[] = [
  {
    name: 'one main task, task_states',
    // With one task, "some running" is "all running": straight to minHealthyWait.
    reaches: ['healthy', 'minHealthyWait', 'pending', 'stopped', 'unhealthy'],
    policy: policy(),
    placed: view({ main: task() }, { clientStatus: 'pending' }),
    next: (snapshot) => allocationMoves(snapshot.context),
  },
  {
    name: 'main task and a poststart task',
    reaches: ['healthy', 'minHealthyWait', 'pending', 'running', 'stopped', 'unhealthy'],
    policy: policy({ healthyDeadlineMs: 4000 }),
    placed: view({ main: task(), post: task({ hook: 'poststart' }) }, { clientStatus: 'pending' }),
    next: (snapshot) => allocationMoves(snapshot.context),
  },
  {
    name: 'one main task with a service check',
    reaches: ['healthy', 'minHealthyWait', 'pending', 'running', 'stopped', 'unhealthy'],
    policy: policy({ useChecks: true, expectedChecks: [check('alive', { task: 'main' })] }),
    placed: view({ main: task() }, { clientStatus: 'pending' }),
    next: (snapshot) => {
      const { checks, now } = snapshot.context;
      const flip = checks.length === 0 || checks[0]?.status !== 'passing' ? passingChecks : failingChecks;
      return [...allocationMoves(snapshot.context), { type: 'observe', checks: flip, now }];
    },
  },
];

/** The facts the machine's future depends on; time is relative to the start so paths stay finite. */
function serialize(snapshot: AllocationHealthSnapshot): string {
  const { view: current, now, checks, checksPassingSince, outcome } = snapshot.context;
  return JSON.stringify([snapshot.value, current, now - T0, checks, checksPassingSince, outcome]);
}

/** Latest start among the tasks that must be running (a poststart task that succeeded has done its part). */
function latestStart(current: AllocationView): number {
  const judged = Object.values(current.tasks).filter((t) => !(t.hook === 'poststart' && t.state === 'dead' && !t.failed));
  return Math.max(...judged.map((t) => t.startedAt ?? Number.NEGATIVE_INFINITY));
}

function checkInvariants(before: AllocationHealthSnapshot | undefined, after: AllocationHealthSnapshot, health: HealthPolicy): void {
  const state = after.value as string;
  const outcome = after.context.outcome as HealthOutcome | null;
  if (before !== undefined && FINAL.has(before.value as string)) {
    expect(state).toBe(before.value);
    expect(outcome).toEqual(before.context.outcome);
  }
  if (state === 'healthy') {
    const at = (outcome as { at: number }).at;
    expect(at).toBeGreaterThanOrEqual(latestStart(after.context.view) + health.minHealthyTimeMs);
    expect(at).toBeLessThanOrEqual(after.context.deadlineAt);
    expect(outcome).toMatchObject({ healthy: true, reasons: {} });
  }
  if (state === 'stopped') expect(outcome).toStrictEqual({ stopped: true, at: expect.any(Number) });
  if (state === 'unhealthy') expect(outcome).toMatchObject({ healthy: false });
  if (!FINAL.has(state)) expect(outcome).toBeNull();
}

const ALL_STATES = ['pending', 'running', 'minHealthyWait', 'healthy', 'unhealthy', 'stopped'];

describe.each(variants)('model-based paths: $name', ({ policy: health, placed, next, reaches }) => {
  // Until the first observation the only event is the allocation as first seen.
  const events = (snapshot: AllocationHealthSnapshot): AllocationHealthEvent[] =>
    Object.keys(snapshot.context.view.tasks).length === 0 ? [{ type: 'observe', view: placed, now: T0 }] : next(snapshot);
  const model = createTestModel(allocationHealthMachine, { input: { policy: health, now: T0 }, events, serializeState: serialize });
  const paths = model.getShortestPaths();

  it('passes through every state of the chart', () => {
    const reached = new Set(paths.flatMap((path) => path.steps.map((step) => step.state.value as string)));
    expect([...reached].sort()).toEqual([...reaches].sort());
    expect(paths.length).toBeGreaterThan(20);
  });

  it('holds the invariants on every step, and the runtime follows the path', async () => {
    for (const path of paths) {
      const { clock, registry } = harness();
      let before: AllocationHealthSnapshot | undefined;
      await path.test({
        events: {
          observe: ({ event }) => {
            const { now, view: seen, checks } = event as AllocationHealthEvent;
            clock.advanceTo(now);
            if (!registry.has('alloc')) registry.track('alloc', health, seen as AllocationView);
            else if (seen !== undefined) registry.updateAllocation('alloc', seen);
            else if (checks !== undefined) registry.updateChecks('alloc', checks);
          },
        },
        states: Object.fromEntries(
          ALL_STATES.map((name) => [
            name,
            (snapshot: AllocationHealthSnapshot) => {
              checkInvariants(before, snapshot, health);
              before = snapshot;
              if (!registry.has('alloc')) return; // the machine before its first observation
              expect(registry.status('alloc')?.state).toBe(snapshot.value);
              expect(registry.status('alloc')?.outcome).toEqual(snapshot.context.outcome);
            },
          ]),
        ),
      });
    }
  });
});
