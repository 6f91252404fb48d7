import { assign, enqueueActions, fromPromise, sendTo, setup } from 'xstate';
import type { ResolvedEnvironmentSpec } from '../src/runners/poseidonFormat.js';
import type { RunnerAllocation, RunnerContext, RunnerEvent, RunnerIo, RunnerMachineInput, RunnerOutput, RunnerReport, StopReason } from './runnerTypes.js';

export type {
  MappedPort, RecoveredPhase, RunnerActors, RunnerAllocation, RunnerContext, RunnerEvent, RunnerExecution, RunnerInput, RunnerIo, RunnerMachineInput, RunnerOutput,
  RunnerReport, StopReason,
} from './runnerTypes.js';

/**
 * One runner: a job `<environment>-<uuid>` whose allocation sleeps until a user claims it.
 *
 *   registering ──► starting ──► idle ──CLAIM──► used ─┬─ marking: pending ⇄ retrying ──► marked
 *        │             │  ▲        │                  └─ activity: timing (reset by ACTIVITY) | unbounded
 *        │             │  └restart─┘                    │ inactivity timeout, DESTROY, allocation gone
 *        └─────────────┴────── failed, RETIRE ──────────┴──► stopping (purge, retried) ──► destroyed
 *
 * Registering writes the job and follows its evaluation; a placement failure, or an allocation
 * that fails before it runs, ends the runner as `failed` (its parent backs off). `stopping` purges
 * the job (retried until Nomad confirms), so nothing of a runner outlives it. Its environment (an
 * actor the input names: runners are not its children, see RunnerActors) hears RUNNER.IDLE,
 * RUNNER.STARTING, RUNNER.STOPPING and RUNNER.DESTROYED; it claims with CLAIM.
 * Writing Nomad is done by invoked actors that call the `io` src/runners gives in the input (the
 * machine only says when); the timers are delayed transitions on the actor's clock.
 */

/** Why a runner whose task was OOM-killed stopped: Poseidon's ErrOOMKilled, word for word. */
export const OOM_KILLED = 'the allocation was OOM Killed';

/** Retries of Nomad writes: 0.5 s, doubling, at most 30 s (deterministic: the machine is pure). */
export function writeRetryMs(attempt: number): number {
  return Math.min(30_000, 500 * 2 ** Math.max(0, attempt - 1));
}

export const runnerActorId = (runnerId: string): string => `runner:${runnerId}`;

/** An update of the allocation the runner follows now (a newer one replaces it; older ones are stale). */
function concernsCurrent(context: RunnerContext, allocation: RunnerAllocation): boolean {
  const current = context.allocation;
  if (current === undefined || allocation.allocId === current.allocId) return current === undefined || allocation.modifyIndex >= current.modifyIndex;
  return allocation.createIndex > current.createIndex;
}

const updated = (event: RunnerEvent): RunnerAllocation | undefined => (event.type === 'ALLOCATION.UPDATED' ? event.allocation : undefined);

const environmentOf = ({ context }: { context: RunnerContext }) => context.environment;

/** The message of an invoked actor's error event. */
export function errorText(event: unknown): string {
  const error = (event as { error?: unknown }).error;
  return error instanceof Error ? error.message : String(error);
}

export const runnerMachine = setup({
  types: {
    input: {} as RunnerMachineInput,
    context: {} as RunnerContext,
    events: {} as RunnerEvent,
    output: {} as RunnerOutput,
  },
  actors: {
    registerRunner: fromPromise<void, { io: RunnerIo; runnerId: string; spec: ResolvedEnvironmentSpec; forcePull: boolean }>(({ input }) => input.io.registerRunner(input)),
    // A destroy right after the claim stops this actor: its signal keeps the mark from being written after the purge.
    markUsed: fromPromise<void, { io: RunnerIo; runnerId: string; timeoutMs: number }>(({ input, signal }) => input.io.markUsed({ ...input, signal })),
    deregisterRunner: fromPromise<void, { io: RunnerIo; runnerId: string }>(({ input }) => input.io.deregisterRunner(input)),
  },
  guards: {
    recoveredUsed: ({ context }) => context.recovered === 'used',
    recoveredIdle: ({ context }) => context.recovered === 'idle',
    recoveredStarting: ({ context }) => context.recovered === 'starting',
    recoveredStale: ({ context }) => context.recovered === 'stale',
    retireRequested: ({ context }) => context.retireRequested,
    isCurrent: ({ context, event }) => {
      const allocation = updated(event);
      return allocation !== undefined && concernsCurrent(context, allocation);
    },
    runs: ({ context, event }) => {
      const allocation = updated(event);
      return allocation !== undefined && concernsCurrent(context, allocation) && allocation.status === 'running';
    },
    ended: ({ context, event }) => {
      const allocation = updated(event);
      return allocation !== undefined && concernsCurrent(context, allocation) && allocation.status === 'ended';
    },
    // A restart (task state lost) or a replacement allocation: not running any more.
    leftRunning: ({ context, event }) => {
      const allocation = updated(event);
      return allocation !== undefined && concernsCurrent(context, allocation) && allocation.status !== 'running';
    },
    unbounded: ({ context }) => context.timeoutMs <= 0,
    knownRunning: ({ context }) => context.allocation?.status === 'running',
    knownEnded: ({ context }) => context.allocation?.status === 'ended',
    // Recovered used with a readable timeout in its meta: nothing to write again.
    markedBeforeRecovery: ({ context }) => context.recovered === 'used' && context.markedOnRecovery,
  },
  actions: {
    stopRetiredWhileRegistering: assign({ stopReason: (): StopReason => ({ kind: 'retired', message: 'retired while it was registered', failure: false }) }),
    stopForInactivity: assign({ stopReason: (): StopReason => ({ kind: 'inactivity', message: 'runner inactivity timeout exceeded', failure: false }) }),
    recordAllocation: assign({ allocation: ({ context, event }) => updated(event) ?? context.allocation }),
    recordRunning: assign(({ context, event }) => {
      const allocation = updated(event) ?? context.allocation;
      const since = context.pendingSince ?? allocation?.at;
      return { allocation, startupMs: allocation && since !== undefined ? Math.max(0, allocation.at - since) : context.startupMs };
    }),
    recordPending: assign({ pendingSince: ({ context, event }) => context.pendingSince ?? updated(event)?.at }),
    recordClaim: assign(({ event }) => (event.type === 'CLAIM' ? { timeoutMs: event.timeoutMs, claimedAt: event.at, lastActivity: event.at } : {})),
    recordActivity: assign({ lastActivity: ({ context, event }) => ('at' in event && typeof event.at === 'number' ? event.at : context.lastActivity) }),
    addExecution: assign({
      executions: ({ context, event }) =>
        event.type === 'EXECUTION.STARTED' ? [...context.executions, { id: event.executionId, kind: event.kind, startedAt: event.at }] : context.executions,
      lastActivity: ({ context, event }) => (event.type === 'EXECUTION.STARTED' ? event.at : context.lastActivity),
    }),
    removeExecution: assign({
      executions: ({ context, event }) => (event.type === 'EXECUTION.ENDED' ? context.executions.filter((e) => e.id !== event.executionId) : context.executions),
    }),
    requestRetire: assign({ retireRequested: true }),
    countMarkFailure: assign({ markAttempts: ({ context }) => context.markAttempts + 1 }),
    countStopFailure: assign({ stopAttempts: ({ context }) => context.stopAttempts + 1 }),
    recordError: assign({ lastError: ({ event }) => errorText(event) }),
    reportIdle: sendTo(environmentOf, ({ context }): RunnerReport => ({ type: 'RUNNER.IDLE', runnerId: context.runnerId, startupMs: context.startupMs ?? 0 })),
    reportStarting: sendTo(environmentOf, ({ context }): RunnerReport => ({ type: 'RUNNER.STARTING', runnerId: context.runnerId })),
    reportDestroyed: sendTo(environmentOf, ({ context }): RunnerReport => ({ type: 'RUNNER.DESTROYED', runnerId: context.runnerId })),
    reportStopping: sendTo(environmentOf, ({ context }): RunnerReport => ({
      type: 'RUNNER.STOPPING',
      runnerId: context.runnerId,
      failed: context.stopReason?.failure === true,
      reason: context.stopReason?.message ?? 'stopped',
    })),
    // The runner's executions end with it (src/runners holds them; the machine says when and why).
    endExecutions: ({ context }) => {
      if (context.stopReason) context.io.endExecutions(context.runnerId, context.stopReason);
    },
    stopWithEventReason: enqueueActions(({ enqueue, event }) => {
      if (event.type === 'DESTROY' || event.type === 'RETIRE') enqueue.assign({ stopReason: { kind: event.type === 'DESTROY' ? 'destroyed' : 'retired', message: event.reason, failure: false } });
    }),
    stopForAllocation: enqueueActions(({ enqueue, event }) => {
      const allocation = updated(event);
      if (!allocation) return;
      // Poseidon's words for an OOM kill (dto.ErrOOMKilled), which its clients match exactly.
      if (allocation.oomKilled === true) return enqueue.assign({ allocation, stopReason: { kind: 'oom-killed', message: OOM_KILLED, failure: false } });
      const gone = allocation.status === 'ended' ? (allocation.reason ?? 'the allocation ended') : 'the allocation restarted, losing its state';
      enqueue.assign({ allocation, stopReason: { kind: 'allocation-ended', message: gone, failure: false } });
    }),
    failForAllocation: enqueueActions(({ context, enqueue, event }) => {
      const allocation = updated(event) ?? context.allocation;
      if (allocation) enqueue.assign({ allocation, stopReason: { kind: 'allocation-failed', message: allocation.reason ?? 'the allocation ended before it ran', failure: true } });
    }),
    failPlacement: assign({ stopReason: ({ event }) => ({ kind: 'placement-failed' as const, message: errorText(event), failure: true }) }),
  },
  delays: {
    inactivity: ({ context }) => context.timeoutMs,
    markRetry: ({ context }) => writeRetryMs(context.markAttempts),
    stopRetry: ({ context }) => writeRetryMs(context.stopAttempts),
  },
}).createMachine({
  id: 'runner',
  context: ({ input }) => ({
    runnerId: input.runnerId,
    environment: input.environment,
    environmentId: input.environmentId,
    spec: input.spec,
    io: input.io,
    templateKey: input.templateKey,
    forcePull: input.forcePull === true,
    recovered: input.recovered?.phase,
    allocation: input.recovered?.allocation,
    pendingSince: undefined,
    startupMs: undefined,
    timeoutMs: input.recovered?.timeoutMs ?? 0,
    claimedAt: undefined,
    lastActivity: undefined,
    executions: [],
    retireRequested: false,
    markAttempts: 0,
    stopAttempts: 0,
    lastError: undefined,
    stopReason: input.recovered?.phase === 'stale' ? { kind: 'retired', message: 'its job is not what the environment runs now', failure: false } : undefined,
    markedOnRecovery: input.recovered?.markAgain !== true,
  }),
  initial: 'init',
  states: {
    init: {
      always: [
        { guard: 'recoveredUsed', target: 'used' },
        { guard: 'recoveredIdle', target: 'idle' },
        { guard: 'recoveredStarting', target: 'starting' },
        { guard: 'recoveredStale', target: 'stopping' },
        { target: 'registering' },
      ],
    },
    registering: {
      invoke: {
        src: 'registerRunner',
        input: ({ context }) => ({ io: context.io, runnerId: context.runnerId, spec: context.spec, forcePull: context.forcePull }),
        // Retired meanwhile: the job exists now, so it is purged.
        onDone: [{ guard: 'retireRequested', target: 'stopping', actions: 'stopRetiredWhileRegistering' }, { target: 'starting' }],
        onError: { target: 'stopping', actions: ['failPlacement', 'recordError'] },
      },
      on: {
        RETIRE: { actions: 'requestRetire' },
        DESTROY: { actions: 'requestRetire' },
        // An allocation of the job proves the registration landed: no need to wait for its evaluation.
        'ALLOCATION.UPDATED': [
          { guard: 'retireRequested', target: 'stopping', actions: ['recordAllocation', 'stopRetiredWhileRegistering'] },
          { guard: 'runs', target: 'idle', actions: 'recordRunning' },
          { guard: 'ended', target: 'stopping', actions: 'failForAllocation' },
          { guard: 'isCurrent', actions: ['recordAllocation', 'recordPending'] },
        ],
      },
    },
    starting: {
      // The allocation may have run (or ended) while the registration's evaluation was followed.
      always: [
        { guard: 'knownRunning', target: 'idle', actions: 'recordRunning' },
        { guard: 'knownEnded', target: 'stopping', actions: 'failForAllocation' },
      ],
      on: {
        'ALLOCATION.UPDATED': [
          { guard: 'runs', target: 'idle', actions: 'recordRunning' },
          { guard: 'ended', target: 'stopping', actions: 'failForAllocation' },
          { guard: 'isCurrent', actions: ['recordAllocation', 'recordPending'] },
        ],
        RETIRE: { target: 'stopping', actions: 'stopWithEventReason' },
        DESTROY: { target: 'stopping', actions: 'stopWithEventReason' },
      },
    },
    idle: {
      entry: 'reportIdle',
      on: {
        CLAIM: { target: 'used', actions: 'recordClaim' },
        'ALLOCATION.UPDATED': [
          { guard: 'ended', target: 'stopping', actions: 'stopForAllocation' },
          { guard: 'leftRunning', target: 'starting', actions: ['recordAllocation', 'reportStarting'] },
          { guard: 'isCurrent', actions: 'recordAllocation' },
        ],
        RETIRE: { target: 'stopping', actions: 'stopWithEventReason' },
        DESTROY: { target: 'stopping', actions: 'stopWithEventReason' },
      },
    },
    used: {
      type: 'parallel',
      on: {
        ACTIVITY: { target: '.activity', reenter: true, actions: 'recordActivity' },
        'EXECUTION.STARTED': { target: '.activity', reenter: true, actions: 'addExecution' },
        'EXECUTION.ENDED': { actions: 'removeExecution' },
        'ALLOCATION.UPDATED': [
          { guard: 'leftRunning', target: 'stopping', actions: 'stopForAllocation' },
          { guard: 'isCurrent', actions: 'recordAllocation' },
        ],
        DESTROY: { target: 'stopping', actions: 'stopWithEventReason' },
        RETIRE: { target: 'stopping', actions: 'stopWithEventReason' },
      },
      states: {
        marking: {
          initial: 'deciding',
          states: {
            deciding: {
              always: [{ guard: 'markedBeforeRecovery', target: 'marked' }, { target: 'pending' }],
            },
            pending: {
              invoke: {
                src: 'markUsed',
                input: ({ context }) => ({ io: context.io, runnerId: context.runnerId, timeoutMs: context.timeoutMs }),
                onDone: 'marked',
                onError: { target: 'retrying', actions: ['countMarkFailure', 'recordError'] },
              },
            },
            // A claim is never lost: the mark is written again until Nomad takes it.
            retrying: { after: { markRetry: 'pending' } },
            marked: {},
          },
        },
        activity: {
          initial: 'deciding',
          states: {
            deciding: { always: [{ guard: 'unbounded', target: 'unbounded' }, { target: 'timing' }] },
            timing: {
              after: {
                inactivity: { target: '#runner.stopping', actions: 'stopForInactivity' },
              },
            },
            unbounded: {},
          },
        },
      },
    },
    stopping: {
      // Once: retries of the purge do not report again.
      entry: ['reportStopping', 'endExecutions'],
      initial: 'deregistering',
      on: { 'ALLOCATION.UPDATED': { guard: 'isCurrent', actions: 'recordAllocation' } },
      states: {
        deregistering: {
          invoke: {
            src: 'deregisterRunner',
            input: ({ context }) => ({ io: context.io, runnerId: context.runnerId }),
            onDone: '#runner.destroyed',
            onError: { target: 'retrying', actions: ['countStopFailure', 'recordError'] },
          },
        },
        retrying: { after: { stopRetry: 'deregistering' } },
      },
    },
    destroyed: { type: 'final', entry: 'reportDestroyed' },
  },
  output: ({ context }) => ({
    runnerId: context.runnerId,
    reason: context.stopReason ?? { kind: 'destroyed', message: 'destroyed', failure: false },
  }),
});
