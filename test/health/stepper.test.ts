/**
 * The registry starts each allocation from machine.resolveState instead of a full initial snapshot.
 * That is only the same thing while entering `pending` runs no action and no eventless transition:
 * this test fails the day it does.
 */
import { createActor } from 'xstate';
import { allocationHealthMachine } from '../../machines/allocationHealth.js';
import type { AllocationHealthInput } from '../../machines/allocationHealthTypes.js';
import { MachineStepper } from '../../src/health/machineStepper.js';
import { T0, policy } from './support/builders.js';

const inputs: AllocationHealthInput[] = [
  { policy: policy(), now: T0 },
  { policy: policy(), now: T0 + 5_000, watchingSince: T0 },
  { policy: policy(), now: T0, watchingSince: T0 + 1 },
  { policy: policy({ minHealthyTimeMs: 0, healthyDeadlineMs: 1 }), now: 0 },
];

describe('MachineStepper.initial', () => {
  it.each(inputs.map((input, i) => [i, input] as const))('input %i: the same snapshot as a started actor', (_i, input) => {
    const fromStepper = new MachineStepper().initial(input);
    const fromActor = createActor(allocationHealthMachine, { input }).getSnapshot();
    expect(fromStepper.value).toEqual(fromActor.value);
    expect(fromStepper.status).toBe(fromActor.status);
    expect(fromStepper.context).toEqual(fromActor.context);
    expect(allocationHealthMachine.getPersistedSnapshot(fromStepper)).toEqual(allocationHealthMachine.getPersistedSnapshot(fromActor));
  });
});
