/**
 * The registry runs the health machine with its own stepper (src/health/machineStepper.ts), not with
 * XState's interpreter. These tests hold it to XState: from the same start, every random sequence of
 * observations (views that move tasks, fail them, restart them, stop or fail the allocation; checks
 * that come and go; time passing; malformed input) gives, step after step, the state, status,
 * context and output XState's own `transition()` gives. And a machine the stepper cannot run the way
 * XState does is refused when compiled, never run differently.
 */
import fc from 'fast-check';
import { assign, createActor, initialTransition, setup, transition, type AnyStateMachine } from 'xstate';
import { allocationHealthMachine } from '../../machines/allocationHealth.js';
import type { AllocationHealthEvent, AllocationHealthInput, AllocationView, CheckView, HealthPolicy, TaskView } from '../../machines/allocationHealthTypes.js';
import { FlatMachineStepper, MachineStepper, UnsupportedMachineError, compileFlatMachine, type HealthMachineState } from '../../src/health/machineStepper.js';
import type { AllocationHealthSnapshot } from '../../src/health/index.js';
import { T0, check, policy } from './support/builders.js';
import { nomadRulesFor } from '../../machines/nomadRules.js';

const inputs: AllocationHealthInput[] = [
  { policy: policy(), now: T0 },
  { policy: policy(), now: T0 + 5_000, watchingSince: T0 },
  { policy: policy(), now: T0, watchingSince: T0 + 1 },
  { policy: policy({ minHealthyTimeMs: 0, healthyDeadlineMs: 1 }), now: 0 },
];

describe('MachineStepper.initial', () => {
  it.each(inputs.map((input, i) => [i, input] as const))('input %i: the same snapshot as a started actor', (_i, input) => {
    const stepper = new MachineStepper();
    const state = stepper.initial(input);
    const fromActor = createActor(allocationHealthMachine, { input }).getSnapshot();
    expect(state.value).toEqual(fromActor.value);
    expect(state.status).toBe(fromActor.status);
    expect(state.context).toEqual(fromActor.context);
    expect(allocationHealthMachine.getPersistedSnapshot(stepper.toSnapshot(state))).toEqual(allocationHealthMachine.getPersistedSnapshot(fromActor));
  });
});

// ---- random observations ----

const TASKS = ['main', 'side', 'init'] as const;
const time = fc.integer({ min: -2_000, max: 12_000 }).map((offset) => T0 + offset);
const nullableTime = fc.option(time, { nil: null });

const taskView: fc.Arbitrary<TaskView> = fc.record({
  state: fc.constantFrom('pending', 'running', 'dead'),
  failed: fc.boolean(),
  restarts: fc.nat({ max: 3 }),
  startedAt: nullableTime,
  finishedAt: nullableTime,
  hook: fc.constantFrom(null, null, 'prestart', 'poststart', 'poststop'),
  sidecar: fc.boolean(),
});

const view: fc.Arbitrary<AllocationView> = fc.record({
  clientStatus: fc.constantFrom('pending', 'running', 'running', 'failed', 'complete', 'unknown', 'lost'),
  desiredStatus: fc.constantFrom('run', 'run', 'run', 'stop', 'evict'),
  tasks: fc.dictionary(fc.constantFrom(...TASKS), taskView, { minKeys: 1, maxKeys: 3 }),
});

const checks: fc.Arbitrary<CheckView[]> = fc.array(
  fc.record({
    task: fc.constantFrom('main', 'side', ''),
    service: fc.constantFrom('web', 'api'),
    name: fc.constantFrom('alive', 'ready'),
    status: fc.constantFrom('passing', 'passing', 'warning', 'critical'),
    sidecar: fc.constantFrom(false, false, true),
  }),
  { maxLength: 3 },
);

const healthPolicy: fc.Arbitrary<HealthPolicy> = fc.record({
  minHealthyTimeMs: fc.constantFrom(0, 1_000, 3_000),
  healthyDeadlineMs: fc.constantFrom(2_000, 5_000, 10_000),
  useChecks: fc.boolean(),
  withChecks: fc.boolean(),
  completedTasksAreHealthy: fc.boolean(),
  // Releases on either side of each rule that changes the machine's judging.
  release: fc.constantFrom('1.1.2', '1.3.2', '1.4.5', '1.5.12', '1.6.0', '2.0.5'),
}).map(({ withChecks, release, ...rest }) =>
  policy({
    ...rest,
    rules: nomadRulesFor(release).rules,
    expectedChecks: withChecks ? [check('alive', { task: 'main' }), check('ready', { task: '', service: 'api', onUpdate: 'ignore_warnings' })] : [],
  }),
);

/** An observation: a view, checks, both, time alone, or something malformed (which the machine records as rejected). */
const event: fc.Arbitrary<(now: number) => AllocationHealthEvent> = fc.oneof(
  { weight: 5, arbitrary: view.map((v) => (now: number) => ({ type: 'observe' as const, view: v, now })) },
  { weight: 2, arbitrary: checks.map((c) => (now: number) => ({ type: 'observe' as const, checks: c, now })) },
  { weight: 1, arbitrary: fc.tuple(view, checks).map(([v, c]) => (now: number) => ({ type: 'observe' as const, view: v, checks: c, now })) },
  { weight: 3, arbitrary: fc.constant((now: number) => ({ type: 'observe' as const, now })) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>({ clientStatus: 3 }, null, { clientStatus: 'running', desiredStatus: 'run', tasks: { main: { state: 'odd' } } }).map((bad) => (now: number) => ({ type: 'observe' as const, view: bad as AllocationView, now })) },
  { weight: 1, arbitrary: fc.constant((_now: number) => ({ type: 'observe' as const, now: Number.NaN })) },
);

/** Events in time order (time moves by 0 to 4 s a step, sometimes back: the machine must cope). */
const sequence = fc.array(fc.tuple(fc.integer({ min: -200, max: 4_000 }), event), { minLength: 1, maxLength: 25 });

function sameAs(state: HealthMachineState, snapshot: AllocationHealthSnapshot): void {
  expect(state.value).toBe(snapshot.value);
  expect(state.status).toBe(snapshot.status);
  expect(state.context).toEqual(snapshot.context);
  expect(state.output).toEqual(snapshot.output);
}

describe('MachineStepper.step', () => {
  test('every step of random observation sequences is the step XState takes', () => {
    const stepper = new MachineStepper();
    const reached = new Set<string>();
    fc.assert(
      fc.property(healthPolicy, fc.option(time, { nil: undefined }), sequence, (health, watchingSince, steps) => {
        const input: AllocationHealthInput = { policy: health, now: T0, ...(watchingSince === undefined ? {} : { watchingSince }) };
        let [snapshot] = initialTransition(allocationHealthMachine, input);
        let state = stepper.initial(input);
        sameAs(state, snapshot);
        let now = T0;
        for (const [delta, make] of steps) {
          now += delta;
          const observed = make(now);
          [snapshot] = transition(allocationHealthMachine, snapshot, observed);
          state = stepper.step(state, observed);
          sameAs(state, snapshot);
          reached.add(state.value);
        }
        // The stored state, made a snapshot again, is the one XState holds.
        expect(allocationHealthMachine.getPersistedSnapshot(stepper.toSnapshot(state))).toEqual(allocationHealthMachine.getPersistedSnapshot(snapshot));
      }),
      { numRuns: 2_000 },
    );
    // Not vacuous: the sequences take the machine everywhere.
    expect([...reached].sort()).toEqual(['disconnected', 'healthy', 'minHealthyWait', 'pending', 'running', 'stopped', 'unhealthy']);
  });

  test('a decided machine takes no more steps: the same stored state comes back', () => {
    const stepper = new MachineStepper();
    let state = stepper.initial({ policy: policy(), now: T0 });
    state = stepper.step(state, { type: 'observe', view: { clientStatus: 'failed', desiredStatus: 'run', tasks: {} }, now: T0 + 1 });
    expect(state).toMatchObject({ value: 'unhealthy', status: 'done', output: { healthy: false, at: T0 + 1, reasons: {} } });
    expect(stepper.step(state, { type: 'observe', now: T0 + 10_000 })).toBe(state);
  });
});

describe('compileFlatMachine refuses what it would not run as XState does', () => {
  const base = setup({
    types: { context: {} as { n: number }, events: {} as { type: 'go' } },
    actions: { bump: assign(({ context }) => ({ n: context.n + 1 })), shout: () => undefined },
  });
  const refused: [string, AnyStateMachine][] = [
    ['entry actions', base.createMachine({ context: { n: 0 }, initial: 'a', states: { a: { entry: 'bump', on: { go: 'b' } }, b: {} } })],
    ['eventless transitions', base.createMachine({ context: { n: 0 }, initial: 'a', states: { a: { always: 'b' }, b: {} } })],
    ['delayed transitions', base.createMachine({ context: { n: 0 }, initial: 'a', states: { a: { after: { 10: 'b' } }, b: {} } })],
    ['nested states', base.createMachine({ context: { n: 0 }, initial: 'a', states: { a: { initial: 'x', states: { x: {} } } } })],
    ['actions other than assign', base.createMachine({ context: { n: 0 }, initial: 'a', states: { a: { on: { go: { actions: 'shout' } } } } })],
    ['wildcard events', base.createMachine({ context: { n: 0 }, initial: 'a', states: { a: { on: { '*': 'b' } }, b: {} } })],
    ['transitions on the root', base.createMachine({ context: { n: 0 }, initial: 'a', on: { go: '.b' }, states: { a: {}, b: {} } })],
  ];
  it.each(refused)('%s', (_what, machine) => {
    expect(() => compileFlatMachine(machine)).toThrow(UnsupportedMachineError);
  });

  test('a machine of the supported shape steps as XState steps it', () => {
    const machine = base.createMachine({
      context: { n: 0 },
      initial: 'a',
      states: { a: { on: { go: [{ guard: ({ context }) => context.n >= 2, target: 'done', actions: 'bump' }, { actions: ['bump', 'bump'] }] } }, done: { type: 'final' } },
      output: ({ context }) => context.n * 10,
    });
    const stepper = new FlatMachineStepper<string, { n: number }, { type: 'go' }>(machine);
    let [snapshot] = initialTransition(machine);
    let state = stepper.initial({ n: 0 });
    for (let i = 0; i < 3; i++) {
      [snapshot] = transition(machine, snapshot, { type: 'go' });
      state = stepper.step(state, { type: 'go' });
      expect([state.value, state.context, state.status, state.output]).toEqual([snapshot.value, snapshot.context, snapshot.status, snapshot.output]);
    }
    expect(state).toMatchObject({ value: 'done', status: 'done', output: 30 });
  });

  test('an assign of part of the context, or of its keys in another order, is merged over it as XState merges it', () => {
    const machine = setup({
      types: { context: {} as { n: number; label: string }, events: {} as { type: 'part' } | { type: 'reordered' } },
      actions: {
        part: assign(({ context }) => ({ n: context.n + 1 })),
        reordered: assign(({ context }) => ({ label: `${context.label}!`, n: context.n * 2 })),
      },
    }).createMachine({ context: { n: 1, label: 'a' }, initial: 'a', states: { a: { on: { part: { actions: 'part' }, reordered: { actions: 'reordered' } } } } });
    const stepper = new FlatMachineStepper<string, { n: number; label: string }, { type: 'part' } | { type: 'reordered' }>(machine);
    let [snapshot] = initialTransition(machine);
    let state = stepper.initial({ n: 1, label: 'a' });
    for (const type of ['part', 'reordered', 'part'] as const) {
      [snapshot] = transition(machine, snapshot, { type });
      state = stepper.step(state, { type });
      expect(state.context).toEqual(snapshot.context);
      expect(Object.keys(state.context)).toEqual(Object.keys(snapshot.context));
    }
    expect(state.context).toEqual({ n: 5, label: 'a!' });
  });
});
