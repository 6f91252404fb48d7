/**
 * Runs the health machine as pure steps over stored snapshots. XState's own `transition()` builds a
 * throw-away actor for every call, which costs more than the step itself; the machine has no side
 * effects (its only actions are assigns, which XState applies while resolving the step), so one
 * inert actor scope can serve every step of every allocation.
 */
import { createActor, type ActorScope, type SnapshotFrom } from 'xstate';
import { allocationHealthMachine, initialContext } from '../../machines/allocationHealth.js';
import type { AllocationHealthEvent, AllocationHealthInput } from '../../machines/allocationHealthTypes.js';

export type AllocationHealthSnapshot = SnapshotFrom<typeof allocationHealthMachine>;
type HealthScope = ActorScope<AllocationHealthSnapshot, AllocationHealthEvent>;

function inertScope(input: AllocationHealthInput): HealthScope {
  // Never started: it only lends XState the `self` and `system` a step may look at.
  const self = createActor(allocationHealthMachine, { input });
  const ignore = (): void => {};
  return {
    self,
    system: self.system,
    id: '',
    sessionId: '',
    logger: ignore,
    defer: ignore,
    emit: ignore,
    stopChild: ignore,
    actionExecutor: ignore,
  };
}

export class MachineStepper {
  private scope: HealthScope | undefined;
  private initialValue: AllocationHealthSnapshot['value'] | undefined;

  initial(input: AllocationHealthInput): AllocationHealthSnapshot {
    this.scope ??= inertScope(input);
    // Entering the initial state runs no action and no eventless transition, so once the machine
    // has been entered the long way, every allocation starts in that state with its own context.
    this.initialValue ??= allocationHealthMachine.getInitialSnapshot(this.scope, input).value;
    return allocationHealthMachine.resolveState({ value: this.initialValue, context: initialContext(input) });
  }

  step(snapshot: AllocationHealthSnapshot, event: AllocationHealthEvent): AllocationHealthSnapshot {
    // Only `initial` creates snapshots, so the scope exists here.
    return allocationHealthMachine.transition(snapshot, event, this.scope as HealthScope);
  }
}
