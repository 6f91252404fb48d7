/**
 * Inspection events for the allocation machines of a HealthRegistry. They are stored snapshots
 * stepped with pure transitions, not actors, so XState announces nothing for them: this emits what
 * an actor of the machine would (`@xstate.actor` when tracking starts, then `xstate.init`, and an
 * `@xstate.event` and `@xstate.snapshot` for every step), each allocation with one actor ref-like
 * object for its whole life whose `logic` is the machine, so an inspector (Warden's, or Stately's
 * `@statelyai/inspect`, which reads `logic.config`) can draw the chart. The registry creates one
 * only when an inspector is given: without one, nothing here runs.
 */
import type { ActorRefLike, AnyEventObject, InspectionEvent, Observer } from 'xstate';
import { allocationHealthMachine } from '../../machines/allocationHealth.js';
import type { AllocationHealthEvent, AllocationHealthInput } from '../../machines/allocationHealthTypes.js';
import type { AllocationHealthSnapshot } from './machineStepper.js';

export type InspectionObserver = Observer<InspectionEvent> | ((event: InspectionEvent) => void);

/** The observer as a function (XState takes either form); undefined for an observer without `next`. */
export function inspectionCallback(observer: InspectionObserver | undefined): ((event: InspectionEvent) => void) | undefined {
  return typeof observer === 'function' ? observer : observer?.next?.bind(observer);
}

/** What stands for an allocation's machine in inspection events: the parts of an actor ref an inspector reads. */
export interface AllocationActorRef extends ActorRefLike {
  /** The allocation ID, as a root actor's id is its session ID. */
  readonly id: string;
  readonly sessionId: string;
  readonly logic: typeof allocationHealthMachine;
  readonly src: typeof allocationHealthMachine;
  /** A root: no parent. */
  readonly _parent: undefined;
  send(event: AllocationHealthEvent): void;
  getSnapshot(): AllocationHealthSnapshot | undefined;
}

/** What the registry lends the refs: the live snapshot, and the way in for events sent through a ref. */
export interface InspectedRegistry {
  snapshot(allocationId: string): AllocationHealthSnapshot | undefined;
  receive(allocationId: string, event: AllocationHealthEvent): void;
}

export class HealthInspection {
  private readonly refs = new Map<string, AllocationActorRef>();

  constructor(
    private readonly emit: (event: InspectionEvent) => void,
    private readonly registry: InspectedRegistry,
  ) {}

  /** Tracking began: the actor is announced, then its start from `input`, as `createActor(...).start()` does. */
  started(allocationId: string, input: AllocationHealthInput, snapshot: AllocationHealthSnapshot): void {
    const ref = this.refOf(allocationId);
    this.emit({ type: '@xstate.actor', rootId: allocationId, actorRef: ref });
    this.report(ref, { type: 'xstate.init', input }, snapshot);
  }

  stepped(allocationId: string, event: AllocationHealthEvent, snapshot: AllocationHealthSnapshot): void {
    this.report(this.refOf(allocationId), event, snapshot);
  }

  /** The registry forgot the allocation: a later tracking of it starts anew (same identity, new announcement). */
  stopped(allocationId: string): void {
    this.refs.delete(allocationId);
  }

  private report(ref: AllocationActorRef, event: AnyEventObject, snapshot: AllocationHealthSnapshot): void {
    this.emit({ type: '@xstate.event', rootId: ref.sessionId, actorRef: ref, sourceRef: undefined, event });
    this.emit({ type: '@xstate.snapshot', rootId: ref.sessionId, actorRef: ref, event, snapshot });
  }

  private refOf(allocationId: string): AllocationActorRef {
    let ref = this.refs.get(allocationId);
    if (ref === undefined) {
      const registry = this.registry;
      ref = {
        id: allocationId,
        sessionId: allocationId,
        logic: allocationHealthMachine,
        src: allocationHealthMachine,
        _parent: undefined,
        send: (event) => registry.receive(allocationId, event),
        getSnapshot: () => registry.snapshot(allocationId),
      };
      this.refs.set(allocationId, ref);
    }
    return ref;
  }
}
