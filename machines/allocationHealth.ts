/**
 * The health of one allocation, as Nomad's client-side tracker decides it
 * (client/allochealth/tracker.go + client/allocrunner/health_hook.go, by the rules of the
 * cluster's release: machines/nomadRules.ts):
 *
 *   pending ─► running ─► minHealthyWait ─► healthy
 *      ▲          │  ▲         │
 *      └──────────┘  └─────────┘           (a restart moves the latest start back)
 *   any of them ◄─► disconnected (ClientStatus unknown: its client is not heard from, so nothing
 *                                 time alone decides is said until it reports again)
 *   any of them ─► unhealthy (a task failed, the client failed the alloc, the deadline passed)
 *   any of them ─► stopped   (desired status stop or evict: no verdict)
 *
 * Pure: time arrives in the events (`now`), and the machine never sets a timer. Whoever runs it asks
 * `wakeAt(context)` and sends an `observe` with nothing but the time then (src/health/registry.ts).
 * Every `observe` is first recorded into the next context (`recorded`); the guards judge that next
 * context, so each event is one transition: the first of Nomad's verdicts that holds, else a move
 * between the waiting states, else staying put.
 */
import { and, assign, not, setup } from 'xstate';
import type {
  AllocationHealthContext,
  AllocationHealthEvent,
  AllocationHealthInput,
  AllocationView,
  CheckView,
  HealthOutcome,
} from './allocationHealthTypes.js';
import { assessTasks, checksPassing, disconnected, explainUnhealthy, healthyAt } from './allocationHealthRules.js';
import { allocationViewProblem, checkViewsProblem, timeProblem, watchingSinceProblem } from './allocationHealthInput.js';

const STOPPING_DESIRED_STATUSES: ReadonlySet<string> = new Set(['stop', 'evict']);

/** What the machine knows before its first observation: nothing is running. */
const UNSEEN: AllocationView = { clientStatus: 'pending', desiredStatus: 'run', tasks: {} };
/** No checks seen yet: one frozen array for every machine (an observation replaces the checks, never changes them). */
const NO_CHECKS: readonly CheckView[] = Object.freeze([]);

function eventProblem(event: AllocationHealthEvent): string | null {
  return (
    timeProblem(event.now) ??
    (event.view === undefined ? null : allocationViewProblem(event.view)) ??
    (event.checks === undefined ? null : checkViewsProblem(event.checks))
  );
}

function record(context: AllocationHealthContext, event: AllocationHealthEvent): AllocationHealthContext {
  const problem = eventProblem(event);
  if (problem !== null) return { ...context, rejected: problem };
  const now = Math.max(context.now, event.now);
  const view = event.view ?? context.view;
  // Empty checks kept as the one shared array: most allocations have none, and 100,000 of them would keep as many.
  const checks = event.checks === undefined ? context.checks : event.checks.length === 0 ? NO_CHECKS : event.checks;
  const tasks = event.view === undefined ? context.tasks : assessTasks(view, context.policy, context.watchingSince);
  // The check watcher's timer runs from when the checks began passing, whatever the tasks do.
  const checksPassingSince = checksPassing(context.policy, checks) ? (context.checksPassingSince ?? now) : null;
  const disconnectedAt = view.clientStatus === 'unknown' ? (context.disconnectedAt ?? now) : null;
  // One literal of every field, not a spread of the context: several times cheaper per event, and
  // every context has the one shape.
  const { policy, watchingSince, deadlineAt, watchingSinceIgnored, outcome } = context;
  return { policy, view, checks, tasks, now, watchingSince, deadlineAt, watchingSinceIgnored, checksPassingSince, disconnectedAt, rejected: null, outcome };
}

// The guards of one event all judge the same next context: compute it once.
// (Three variables, not a record of them: no object allocated per event.)
let recordedFrom: AllocationHealthContext | undefined;
let recordedEvent: AllocationHealthEvent | undefined;
let recordedNext: AllocationHealthContext | undefined;
function recorded(context: AllocationHealthContext, event: AllocationHealthEvent): AllocationHealthContext {
  if (recordedFrom !== context || recordedEvent !== event || recordedNext === undefined) {
    recordedNext = record(context, event);
    recordedFrom = context;
    recordedEvent = event;
  }
  return recordedNext;
}

type Judged = (next: AllocationHealthContext) => boolean;
const onNext =
  (judge: Judged) =>
  ({ context, event }: { context: AllocationHealthContext; event: AllocationHealthEvent }): boolean =>
    judge(recorded(context, event));

type Judge = (next: AllocationHealthContext) => HealthOutcome;
const judged =
  (judge: Judge) =>
  ({ context, event }: { context: AllocationHealthContext; event: AllocationHealthEvent }): AllocationHealthContext => {
    const next = recorded(context, event);
    return { ...next, outcome: judge(next) };
  };

const healthSetup = setup({
  types: {
    context: {} as AllocationHealthContext,
    events: {} as AllocationHealthEvent,
    input: {} as AllocationHealthInput,
    output: {} as HealthOutcome,
  },
  // A verdict records the observation and judges it in one assign: XState clones the whole
  // snapshot for every assign, and a verdict is the last step of every allocation.
  actions: {
    record: assign(({ context, event }) => recorded(context, event)),
    judgeStopped: assign(judged((next) => ({ stopped: true, at: next.now }))),
    judgeTaskFailed: assign(judged((next) => {
      const at = (next.tasks.kind === 'failed' ? next.tasks.at : null) ?? next.now;
      return { healthy: false, at, reasons: explainUnhealthy(next, at) };
    })),
    // tracker.go TaskEvents: nothing task-related to explain when the client failed the allocation.
    judgeAllocFailed: assign(judged((next) => ({ healthy: false, at: next.now, reasons: {} }))),
    judgeHealthy: assign(judged((next) => ({ healthy: true, at: healthyAt(next) ?? next.now, reasons: {} }))),
    judgeDeadline: assign(judged((next) => ({ healthy: false, at: next.deadlineAt, reasons: explainUnhealthy(next, next.deadlineAt) }))),
  },
  guards: {
    desiredStop: onNext((next) => STOPPING_DESIRED_STATUSES.has(next.view.desiredStatus)),
    taskFailed: onNext((next) => next.tasks.kind === 'failed'),
    allocFailed: onNext((next) => next.view.clientStatus === 'failed'),
    // What time alone decides waits while the client is not heard from.
    healthyDue: onNext((next) => {
      if (disconnected(next)) return false;
      const at = healthyAt(next);
      return at !== null && at <= next.now && at <= next.deadlineAt;
    }),
    deadlinePassed: onNext((next) => !disconnected(next) && next.now >= next.deadlineAt),
    clientAway: onNext(disconnected),
    allReady: onNext((next) => healthyAt(next) !== null),
    someTaskRunning: onNext(
      (next) => next.tasks.kind === 'started' || (next.tasks.kind === 'starting' && next.tasks.someRunning),
    ),
  },
});

/** Nomad's verdicts, in its order of precedence, judged before any move between the waiting states. */
const verdicts = [
  { guard: 'desiredStop', target: 'stopped', actions: 'judgeStopped' },
  { guard: 'taskFailed', target: 'unhealthy', actions: 'judgeTaskFailed' },
  { guard: 'allocFailed', target: 'unhealthy', actions: 'judgeAllocFailed' },
  { guard: 'healthyDue', target: 'healthy', actions: 'judgeHealthy' },
  { guard: 'deadlinePassed', target: 'unhealthy', actions: 'judgeDeadline' },
] as const;

/** Nothing decided and no move: remember what was observed. */
const stay = { actions: 'record' } as const;

/** Its client stopped heartbeating (ClientStatus unknown): wait for it to report again. */
const toDisconnected = { guard: 'clientAway', target: 'disconnected', actions: 'record' } as const;

/**
 * health_hook.go: the deadline counts from when Nomad began watching (init, also on an update that
 * changes the deployment), which may be before judging starts.
 */
export function initialContext(input: AllocationHealthInput): AllocationHealthContext {
  const ignored = input.watchingSince === undefined ? null : watchingSinceProblem(input.watchingSince, input.now);
  const known = input.watchingSince === undefined || ignored !== null ? null : input.watchingSince;
  return {
    policy: input.policy,
    view: UNSEEN,
    checks: NO_CHECKS,
    tasks: assessTasks(UNSEEN, input.policy, null),
    now: input.now,
    watchingSince: known,
    deadlineAt: (known ?? input.now) + input.policy.healthyDeadlineMs,
    watchingSinceIgnored: ignored,
    checksPassingSince: null,
    disconnectedAt: null,
    rejected: null,
    outcome: null,
  };
}

export const allocationHealthMachine = healthSetup.createMachine({
  id: 'allocationHealth',
  context: ({ input }) => initialContext(input),
  initial: 'pending',
  states: {
    pending: {
      on: {
        observe: [
          ...verdicts,
          toDisconnected,
          { guard: 'allReady', target: 'minHealthyWait', actions: 'record' },
          { guard: 'someTaskRunning', target: 'running', actions: 'record' },
          stay,
        ],
      },
    },
    running: {
      on: {
        observe: [
          ...verdicts,
          toDisconnected,
          { guard: 'allReady', target: 'minHealthyWait', actions: 'record' },
          { guard: not('someTaskRunning'), target: 'pending', actions: 'record' },
          stay,
        ],
      },
    },
    minHealthyWait: {
      on: {
        observe: [
          ...verdicts,
          toDisconnected,
          { guard: and([not('allReady'), 'someTaskRunning']), target: 'running', actions: 'record' },
          { guard: not('someTaskRunning'), target: 'pending', actions: 'record' },
          stay,
        ],
      },
    },
    // Only what the server writes decides here (a stop, a lost allocation); back to waiting once
    // the client reports again.
    disconnected: {
      on: {
        observe: [
          ...verdicts,
          { guard: 'clientAway', actions: 'record' },
          { guard: 'allReady', target: 'minHealthyWait', actions: 'record' },
          { guard: 'someTaskRunning', target: 'running', actions: 'record' },
          { guard: not('someTaskRunning'), target: 'pending', actions: 'record' },
        ],
      },
    },
    // Final: they take no event, so a decided allocation never changes.
    healthy: { type: 'final' },
    unhealthy: { type: 'final' },
    stopped: { type: 'final' },
  },
  output: ({ context }) => context.outcome as HealthOutcome,
});

export type AllocationHealthState = 'pending' | 'running' | 'minHealthyWait' | 'disconnected' | 'healthy' | 'unhealthy' | 'stopped';
