/**
 * Runs the health machine as pure steps over stored states, without XState's interpreter.
 *
 * XState's `transition()` resolves a whole macrostep for every event (state node sets, exit and entry
 * sets, action queues, a snapshot object with its node list): at 100,000 allocations that costs more
 * than the rules themselves, and the snapshots it stores cost heap. The machine needs none of it: it
 * is flat (atomic and final states under the root), its transitions are guarded and their actions
 * are all assigns, and it has no entry or exit actions, no eventless or delayed transitions, no
 * invocations, no wildcard events. So its definition is read once (`compileFlatMachine`) into, per
 * state and event type, the candidate transitions in order, and a step is what XState does for a
 * machine of that shape: the first candidate whose guard holds (named guards from the machine's
 * implementations, `not` / `and` / `or` of them evaluated as XState's checks evaluate them), its assigns applied in
 * order (each merged over the context, as XState merges), its target entered, and a final target
 * makes the machine done with the root's output. No candidate: nothing changes. Compiling throws if
 * the machine ever uses anything else, and test/health/stepper.test.ts checks the steps against
 * XState's own `transition()` on random event sequences.
 *
 * The stored state (value, context, status, output) becomes an XState snapshot only when someone
 * asks for one (an inspector, a caller persisting it): `toSnapshot`.
 */
import { and, not, or, type AnyStateMachine, type SnapshotFrom } from 'xstate';
import { allocationHealthMachine, initialContext, type AllocationHealthState } from '../../machines/allocationHealth.js';
import type { AllocationHealthContext, AllocationHealthEvent, AllocationHealthInput } from '../../machines/allocationHealthTypes.js';

export type AllocationHealthSnapshot = SnapshotFrom<typeof allocationHealthMachine>;

/** A machine's state as stored: where it is, its context, and (once done) its output. */
export interface StepperState<TValue extends string, TContext> {
  readonly value: TValue;
  readonly context: TContext;
  readonly status: 'active' | 'done';
  readonly output?: unknown;
}

/** The same, changed in place by `advance` (a registry keeps it in its own record of the allocation). */
export interface MutableStepperState<TValue extends string, TContext> {
  value: TValue;
  context: TContext;
  status: 'active' | 'done';
  output?: unknown;
}

export type HealthMachineState = StepperState<AllocationHealthState, AllocationHealthContext>;

/** Raised when a machine uses something the flat stepper does not run (it must then be run by XState). */
export class UnsupportedMachineError extends Error {
  readonly code = 'WARDEN_UNSUPPORTED_MACHINE';

  constructor(what: string) {
    super(`the flat machine stepper cannot run this machine: ${what}`);
    this.name = 'UnsupportedMachineError';
  }
}

type Context = Record<string, unknown>;
type Event = { readonly type: string };
/** What guards and assigns are given: `{ context, event }`, as XState gives them (one object serves every guard of a step). */
type Args = { readonly context: Context; readonly event: Event };
type Guard = (args: Args) => boolean;
type Assignment = (context: Context, event: Event) => Context;

interface CompiledTransition {
  readonly guard: Guard | undefined;
  readonly assignments: readonly Assignment[];
  /** The state entered; undefined for a transition that stays (no exit, no entry). */
  readonly target: string | undefined;
}

interface CompiledState {
  /** The state node's id (XState's done event of a final state names it). */
  readonly id: string;
  readonly final: boolean;
  readonly on: ReadonlyMap<string, readonly CompiledTransition[]>;
}

/** An XState state node, as far as this reads it. */
interface NodeLike {
  readonly id: string;
  readonly key: string;
  readonly type: string;
  readonly parent?: NodeLike;
  readonly states: Record<string, NodeLike>;
  readonly entry: readonly unknown[];
  readonly exit: readonly unknown[];
  readonly always?: readonly unknown[];
  readonly after: readonly unknown[];
  readonly invoke: readonly unknown[];
  readonly transitions: Map<string, readonly TransitionLike[]>;
  readonly output?: unknown;
}

interface TransitionLike {
  readonly target: readonly NodeLike[] | undefined;
  readonly actions: readonly unknown[];
  readonly guard?: unknown;
  readonly reenter: boolean;
}

/** A built-in higher-order guard (XState's `not`, `and`, `or`): a function carrying its own `check` and its operands. */
interface BuiltinGuard {
  check(snapshot: unknown, args: { context: Context; event: Event }, guard: unknown): boolean;
  readonly guards?: readonly unknown[];
}

// XState's checks of its built-in guards, told apart by identity (one function per kind, shared by every instance).
const NOT_CHECK = (not('') as unknown as BuiltinGuard).check;
const AND_CHECK = (and([]) as unknown as BuiltinGuard).check;
const OR_CHECK = (or([]) as unknown as BuiltinGuard).check;

/** `and` (`any` false) or `or` (`any` true) of `guards`, stopping at the first that decides. */
function holds(guards: readonly Guard[], args: Args, any: boolean): boolean {
  for (const guard of guards) if (guard(args) === any) return any;
  return !any;
}

function compileGuard(machine: AnyStateMachine, guard: unknown, where: string): Guard | undefined {
  if (guard === undefined) return undefined;
  // What XState's evaluateGuard needs of a snapshot to resolve the guards nested in a built-in one.
  const scope = { machine };
  const implementations = machine.implementations.guards as Record<string, unknown>;
  const resolved = typeof guard === 'string' ? implementations[guard] : guard;
  if (typeof resolved !== 'function') throw new UnsupportedMachineError(`${where}: guard ${JSON.stringify(guard)} is not a named or inline guard function`);
  if (!('check' in resolved)) {
    const expression = resolved as (args: Args, params: undefined) => boolean;
    return (args) => expression(args, undefined);
  }
  const builtin = resolved as unknown as BuiltinGuard;
  // not / and / or of named or inline guards: evaluated here, as XState's checks evaluate them (each
  // operand given the step's context and event, no params; `and` and `or` stop at the first that
  // decides), without resolving the operands by name and building their arguments on every step.
  const operands = builtin.guards;
  if (operands !== undefined && operands.every((operand) => typeof operand === 'string' || typeof operand === 'function')) {
    const compiled = operands.map((operand) => compileGuard(machine, operand, where) as Guard);
    const [first] = compiled;
    if (builtin.check === NOT_CHECK && first !== undefined && compiled.length === 1) return (args) => !first(args);
    if (builtin.check === AND_CHECK) return (args) => holds(compiled, args, false);
    if (builtin.check === OR_CHECK) return (args) => holds(compiled, args, true);
  }
  return (args) => builtin.check(scope, args, resolved);
}

/**
 * Whether merging `assigned` over `context` would only copy `assigned`: a plain object with the
 * context's keys, in the same order, and no other.
 */
function coversEveryKey(assigned: Context, context: Context): boolean {
  if (Object.getPrototypeOf(assigned) !== Object.prototype) return false;
  const keys = Object.keys(assigned);
  let i = 0;
  for (const key in context) if (keys[i++] !== key) return false;
  return i === keys.length;
}

function compileAction(machine: AnyStateMachine, action: unknown, where: string): Assignment {
  const implementations = machine.implementations.actions as Record<string, unknown>;
  const resolved: unknown = typeof action === 'string' ? implementations[action] : action;
  const { type, assignment: given } = (typeof resolved === 'function' ? resolved : {}) as { type?: unknown; assignment?: unknown };
  if (type !== 'xstate.assign' || typeof given !== 'function') {
    throw new UnsupportedMachineError(`${where}: action ${JSON.stringify(action)} is not an assign of a function`);
  }
  const assignment = given as (args: { context: Context; event: Event }, params: undefined) => Context;
  // XState merges what an assign returns over the context it had; an assign that returns a whole
  // context (every key the context has: the health machine's all do) merges into a copy of itself.
  return (context, event) => {
    const assigned = assignment({ context, event }, undefined);
    return coversEveryKey(assigned, context) ? assigned : { ...context, ...assigned };
  };
}

/** The machine's states, each with its candidate transitions by event type, read from its definition. */
export function compileFlatMachine(machine: AnyStateMachine): { readonly initial: string; readonly states: ReadonlyMap<string, CompiledState> } {
  const root = machine.root as unknown as NodeLike;
  if (root.type !== 'compound') throw new UnsupportedMachineError(`its root is ${root.type}, not compound`);
  const noBehaviour = (node: NodeLike, where: string): void => {
    if (node.entry.length > 0 || node.exit.length > 0) throw new UnsupportedMachineError(`${where} has entry or exit actions`);
    if ((node.always?.length ?? 0) > 0 || node.after.length > 0) throw new UnsupportedMachineError(`${where} has eventless or delayed transitions`);
    if (node.invoke.length > 0) throw new UnsupportedMachineError(`${where} invokes actors`);
  };
  noBehaviour(root, 'the root');
  if (root.transitions.size > 0) throw new UnsupportedMachineError('the root has transitions of its own');
  const initial = (machine.root.initial.target as readonly NodeLike[] | undefined)?.[0];
  if (initial === undefined || initial.parent !== root) throw new UnsupportedMachineError('its initial state is not a child of the root');
  const states = new Map<string, CompiledState>();
  for (const [key, node] of Object.entries(root.states)) {
    const where = `state ${key}`;
    if (node.type !== 'atomic' && node.type !== 'final') throw new UnsupportedMachineError(`${where} is ${node.type}`);
    noBehaviour(node, where);
    const on = new Map<string, CompiledTransition[]>();
    for (const [eventType, transitions] of node.transitions) {
      if (eventType.includes('*')) throw new UnsupportedMachineError(`${where} takes wildcard events (${eventType})`);
      on.set(
        eventType,
        transitions.map((transition, i) => {
          const at = `${where}, ${eventType} transition ${i}`;
          const targets = transition.target ?? [];
          if (targets.length > 1 || targets.some((target) => target.parent !== root)) throw new UnsupportedMachineError(`${at} targets other than one state of the root`);
          if (transition.reenter && targets[0] === node) throw new UnsupportedMachineError(`${at} re-enters its own state`);
          return {
            guard: compileGuard(machine, transition.guard, at),
            assignments: transition.actions.map((action) => compileAction(machine, action, at)),
            target: targets[0]?.key,
          };
        }),
      );
    }
    states.set(key, { id: node.id, final: node.type === 'final', on });
  }
  return { initial: initial.key, states };
}

/** Steps one flat machine (see the module comment). */
export class FlatMachineStepper<TValue extends string, TContext, TEvent extends Event> {
  private readonly initialValue: TValue;
  private readonly states: ReadonlyMap<string, CompiledState>;
  private readonly output: unknown;

  constructor(private readonly machine: AnyStateMachine) {
    const compiled = compileFlatMachine(machine);
    this.initialValue = compiled.initial as TValue;
    this.states = compiled.states;
    this.output = (machine.root as unknown as NodeLike).output;
  }

  /** The machine entered with `context` (entering its initial state runs nothing: see the compile checks). */
  initial(context: TContext): StepperState<TValue, TContext> {
    return { value: this.initialValue, context, status: 'active' };
  }

  /** What XState's `transition()` gives for `event`, as a stored state; the same object when nothing is taken. */
  step(state: StepperState<TValue, TContext>, event: TEvent): StepperState<TValue, TContext> {
    const next = { ...state };
    return this.advance(next, event) ? next : state;
  }

  /** `step`, written into `state` itself; false (and `state` untouched) when no transition is taken. */
  advance(state: MutableStepperState<TValue, TContext>, event: TEvent): boolean {
    if (state.status !== 'active') return false;
    const candidates = this.states.get(state.value)?.on.get(event.type);
    if (candidates === undefined) return false;
    const before = state.context as Context;
    const args: Args = { context: before, event };
    for (const candidate of candidates) {
      if (candidate.guard !== undefined && !candidate.guard(args)) continue;
      let context = before;
      for (const assign of candidate.assignments) context = assign(context, event);
      const value = (candidate.target ?? state.value) as TValue;
      const entered = this.states.get(value) as CompiledState;
      state.value = value;
      state.context = context as TContext;
      if (entered.final) {
        state.status = 'done';
        state.output = this.outputOf(context, entered);
      }
      return true;
    }
    return false;
  }

  /** The machine's output once `final` is entered: the root's output mapper given XState's done event of that state. */
  private outputOf(context: Context, final: CompiledState): unknown {
    if (typeof this.output !== 'function') return this.output;
    const mapper = this.output as (args: { context: Context; event: { type: string; output: undefined }; self: undefined }) => unknown;
    return mapper({ context, event: { type: `xstate.done.state.${final.id}`, output: undefined }, self: undefined });
  }

  /** The XState snapshot of a stored state (what an actor of the machine would hold). */
  toSnapshot(state: StepperState<TValue, TContext>): SnapshotFrom<AnyStateMachine> {
    return this.machine.resolveState({ value: state.value, context: state.context as Context, ...(state.status === 'done' ? { output: state.output } : {}) });
  }
}

/** The allocation health machine's stepper. */
export class MachineStepper {
  private readonly flat = new FlatMachineStepper<AllocationHealthState, AllocationHealthContext, AllocationHealthEvent>(allocationHealthMachine);

  initial(input: AllocationHealthInput): HealthMachineState {
    return this.flat.initial(initialContext(input));
  }

  step(state: HealthMachineState, event: AllocationHealthEvent): HealthMachineState {
    return this.flat.step(state, event);
  }

  advance(state: MutableStepperState<AllocationHealthState, AllocationHealthContext>, event: AllocationHealthEvent): boolean {
    return this.flat.advance(state, event);
  }

  toSnapshot(state: HealthMachineState): AllocationHealthSnapshot {
    return this.flat.toSnapshot(state) as AllocationHealthSnapshot;
  }
}
