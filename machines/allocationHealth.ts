/**
 * The health of one allocation, as Nomad's client-side tracker decides it
 * (client/allochealth/tracker.go + client/allocrunner/health_hook.go on Nomad's main branch):
 *
 *   pending ─► running ─► minHealthyWait ─► healthy
 *      ▲          │  ▲         │
 *      └──────────┘  └─────────┘           (a restart moves the latest start back)
 *   any of them ─► unhealthy (a task failed, the client failed the alloc, the deadline passed)
 *   any of them ─► stopped   (desired status stop or evict: no verdict)
 *
 * Pure: time arrives in the events (`now`), and the machine never sets a timer. Whoever runs it asks
 * `wakeAt(context)` and sends a `tick` then (see src/health/registry.ts). Every event first records
 * what it says; the eventless transitions then move to the state the record implies.
 */
import { and, assign, not, setup } from 'xstate';
import type {
  AllocationHealthContext,
  AllocationHealthEvent,
  AllocationHealthInput,
  HealthOutcome,
} from './allocationHealthTypes.js';
import { assessTasks, checksPassing, explainUnhealthy, healthyAt } from './allocationHealthRules.js';
import { allocationViewProblem, checkViewsProblem, timeProblem } from './allocationHealthInput.js';

const STOPPING_DESIRED_STATUSES: ReadonlySet<string> = new Set(['stop', 'evict']);

function startOf(context: Pick<AllocationHealthContext, 'tasks'>): number | null {
  return context.tasks.kind === 'started' ? context.tasks.latestStart : null;
}

function passingSince(
  context: Pick<AllocationHealthContext, 'policy' | 'checks' | 'checksPassingSince'>,
  now: number,
): number | null {
  if (!checksPassing(context.policy, context.checks)) return null;
  return context.checksPassingSince ?? now;
}

const healthSetup = setup({
  types: {
    context: {} as AllocationHealthContext,
    events: {} as AllocationHealthEvent,
    input: {} as AllocationHealthInput,
    output: {} as HealthOutcome,
  },
  actions: {
    recordAllocation: assign(({ context, event }) => {
      if (event.type !== 'alloc.update') return {};
      const problem = timeProblem(event.now) ?? allocationViewProblem(event.view);
      if (problem !== null) return { rejected: problem };
      const tasks = assessTasks(event.view, context.policy);
      const moved = startOf({ tasks }) !== startOf(context);
      // tracker.go setTaskHealth(false, false): tasks going unhealthy force the checks to prove
      // themselves again for a whole min_healthy_time.
      const checksPassingSince = moved ? passingSince({ ...context, checksPassingSince: null }, event.now) : context.checksPassingSince;
      return { view: event.view, tasks, now: event.now, checksPassingSince, rejected: null };
    }),
    recordChecks: assign(({ context, event }) => {
      if (event.type !== 'checks.update') return {};
      const problem = timeProblem(event.now) ?? checkViewsProblem(event.checks);
      if (problem !== null) return { rejected: problem };
      const next = { ...context, checks: event.checks };
      return { checks: event.checks, now: event.now, checksPassingSince: passingSince(next, event.now), rejected: null };
    }),
    recordTime: assign(({ context, event }) => {
      const problem = timeProblem(event.now);
      if (problem !== null) return { rejected: problem };
      return { now: Math.max(context.now, event.now), rejected: null };
    }),
    judgeStopped: assign(({ context }) => ({ outcome: { stopped: true, at: context.now } as const })),
    judgeTaskFailed: assign(({ context }) => {
      const at = (context.tasks.kind === 'failed' ? context.tasks.at : null) ?? context.now;
      return { outcome: { healthy: false, at, reasons: explainUnhealthy(context, at) } };
    }),
    // tracker.go TaskEvents: nothing task-related to explain when the client failed the allocation.
    judgeAllocFailed: assign(({ context }) => ({ outcome: { healthy: false, at: context.now, reasons: {} } })),
    judgeHealthy: assign(({ context }) => ({
      outcome: { healthy: true, at: healthyAt(context) ?? context.now, reasons: {} },
    })),
    judgeDeadline: assign(({ context }) => ({
      outcome: { healthy: false, at: context.deadlineAt, reasons: explainUnhealthy(context, context.deadlineAt) },
    })),
  },
  guards: {
    desiredStop: ({ context }) => STOPPING_DESIRED_STATUSES.has(context.view.desiredStatus),
    taskFailed: ({ context }) => context.tasks.kind === 'failed',
    allocFailed: ({ context }) => context.view.clientStatus === 'failed',
    healthyDue: ({ context }) => {
      const at = healthyAt(context);
      return at !== null && at <= context.now && at <= context.deadlineAt;
    },
    deadlinePassed: ({ context }) => context.now >= context.deadlineAt,
    allReady: ({ context }) => healthyAt(context) !== null,
    someTaskRunning: ({ context }) =>
      context.tasks.kind === 'started' || (context.tasks.kind === 'starting' && context.tasks.someRunning),
  },
});

/** The verdicts, in Nomad's order of precedence, checked before any move between the waiting states. */
const verdicts = [
  { guard: 'desiredStop', target: 'stopped', actions: 'judgeStopped' },
  { guard: 'taskFailed', target: 'unhealthy', actions: 'judgeTaskFailed' },
  { guard: 'allocFailed', target: 'unhealthy', actions: 'judgeAllocFailed' },
  { guard: 'healthyDue', target: 'healthy', actions: 'judgeHealthy' },
  { guard: 'deadlinePassed', target: 'unhealthy', actions: 'judgeDeadline' },
] as const;

/** What the waiting states do with an event: record it (final states record nothing, so never change). */
const recording = {
  'alloc.update': { actions: 'recordAllocation' },
  'checks.update': { actions: 'recordChecks' },
  tick: { actions: 'recordTime' },
} as const;

export const allocationHealthMachine = healthSetup.createMachine({
  id: 'allocationHealth',
  context: ({ input }) => {
    const checks = input.checks ?? [];
    const context: AllocationHealthContext = {
      policy: input.policy,
      view: input.view,
      checks,
      tasks: assessTasks(input.view, input.policy),
      now: input.now,
      deadlineAt: input.now + input.policy.healthyDeadlineMs,
      checksPassingSince: null,
      rejected: null,
      outcome: null,
    };
    return { ...context, checksPassingSince: passingSince(context, input.now) };
  },
  initial: 'pending',
  states: {
    pending: {
      on: recording,
      always: [
        ...verdicts,
        { guard: 'allReady', target: 'minHealthyWait' },
        { guard: 'someTaskRunning', target: 'running' },
      ],
    },
    running: {
      on: recording,
      always: [
        ...verdicts,
        { guard: 'allReady', target: 'minHealthyWait' },
        { guard: not('someTaskRunning'), target: 'pending' },
      ],
    },
    minHealthyWait: {
      on: recording,
      always: [
        ...verdicts,
        { guard: and([not('allReady'), 'someTaskRunning']), target: 'running' },
        { guard: not('someTaskRunning'), target: 'pending' },
      ],
    },
    healthy: { type: 'final' },
    unhealthy: { type: 'final' },
    stopped: { type: 'final' },
  },
  output: ({ context }) => context.outcome as HealthOutcome,
});

export type AllocationHealthState = 'pending' | 'running' | 'minHealthyWait' | 'healthy' | 'unhealthy' | 'stopped';
