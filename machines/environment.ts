import { assign, enqueueActions, fromPromise, setup, type ActorRefFrom, type AnyActorRef } from 'xstate';
import type { ResolvedEnvironmentSpec } from '../src/runners/poseidonFormat.js';
import { errorText } from './runner.js';
import type { RunnerActors, RunnerInput, RunnerIo, RunnerReport } from './runnerTypes.js';

/** The runners' I/O and the template job's writes (src/runners). */
export interface EnvironmentIo extends RunnerIo {
  /** Writes the template job (create, or update what is there) and follows its evaluation. */
  registerTemplate(request: { spec: ResolvedEnvironmentSpec }): Promise<void>;
  /** Purges the template job (a job already gone is fine). */
  deregisterTemplate(request: { environmentId: number }): Promise<void>;
}

/**
 * One execution environment: its template job and the pool of runners made from it, each an actor
 * of machines/runner.ts that reports to this one (kept in `runnerActors`, not as children: XState
 * copies a parent's children at each spawn and stop, so a claim would cost O(pool)).
 *
 *   live ─┬─ template: registering ──► registered ⇄ updating          (UPDATE: the template written again)
 *         └─ pool:     ready ⟲ spawn runners up to prewarmingPoolSize, retire the surplus
 *                        │  ▲ ▲
 *                        │  │ └─ refilling ◄── CLAIM (the replacement comes just after the claim's step)
 *                        ▼  │ after the back-off (then one runner at a time until one runs)
 *                      backingOff  ◄── a runner that failed to be placed or to start
 *      │ DELETE                      CLAIM: the first idle runner, at once, in the same step
 *      ▼
 *   deleting (every runner retired and purged) ──► removingTemplate ──► deleted
 *   failed (the template could not be registered: nothing of it is left)
 *
 * The pool counts runners as provisioning (registered, not running yet), idle and used; it never
 * has more than prewarmingPoolSize idle + provisioning, and whenever it has fewer a runner is on
 * its way, a refill is due or a back-off timer is running. A template update replaces the idle and provisioning
 * runners of an older template (used ones are left alone). Writing Nomad is done by the `io` the
 * input gives (src/runners), runner IDs come from it too: the machine itself does no I/O.
 */

export interface EnvironmentInput {
  spec: ResolvedEnvironmentSpec;
  io: EnvironmentIo;
  /** What makes runners of this spec differ from others (runnerTemplateKey). */
  templateKey: string;
  /** A new environment registers its template job first; a recovered one adopts the one on the cluster. */
  register: boolean;
  /** Runners found on the cluster (each with `recovered`). */
  recovered: RunnerInput[];
  /** Where the runners' actors are made and kept. */
  runnerActors: RunnerActors;
  /** A fresh runner ID (`<environment>-<uuid>`). */
  newRunnerId: () => string;
  /** Back-off after failed runners: initialMs × 2^(failures-1), at most maxMs (defaults 1 s, 60 s). */
  backoff?: { initialMs?: number; maxMs?: number };
}

export interface EnvironmentContext {
  environmentId: number;
  spec: ResolvedEnvironmentSpec;
  io: EnvironmentIo;
  runnerActors: RunnerActors;
  /** Runners found on the cluster, started as the environment starts. */
  recovered: RunnerInput[];
  templateKey: string;
  /** A template job is on the cluster: runners can be made from it. */
  templateReady: boolean;
  /** Idle runners, the longest idle first (claimed first). */
  idle: string[];
  /** Registered, not running yet. */
  provisioning: string[];
  used: string[];
  /** Every runner not finished yet (stopping ones included). */
  runners: string[];
  /** Runners in a row that failed to be placed or to start. */
  failures: number;
  /** After a back-off: one runner at a time until one runs. */
  probing: boolean;
  /** The answer to the latest CLAIM (read by the caller right after sending it). */
  claim: { claimId: number; runnerId: string | undefined } | undefined;
  /** The update being written, then the outcome of the latest one. */
  pendingUpdate: { requestId: number; spec: ResolvedEnvironmentSpec; templateKey: string; pull: boolean } | undefined;
  update: { requestId: number; error: string | undefined } | undefined;
  /** Startup of the latest runner that became idle, and how many did. */
  lastStartupMs: number | undefined;
  started: number;
  lastError: string | undefined;
  /** Runners still to be started with their image pulled again (those a create or a re-PUT starts). */
  forcePulls: number;
  /** The template job is gone from Nomad already (someone else deleted it): deleting leaves it be. */
  templateGone: boolean;
  newRunnerId: () => string;
  backoff: { initialMs: number; maxMs: number };
}

export type EnvironmentEvent =
  | { type: 'CLAIM'; claimId: number; timeoutMs: number; at: number }
  /** A PUT: the template written again; with `pull`, the idle and provisioning runners replaced by runners that pull their image again. */
  | { type: 'UPDATE'; requestId: number; spec: ResolvedEnvironmentSpec; templateKey: string; pull: boolean }
  /** Someone else changed the template job (Poseidon's fetch): the spec taken as it is, nothing written. */
  | { type: 'REFRESH'; spec: ResolvedEnvironmentSpec; templateKey: string }
  | { type: 'DELETE' }
  /** Someone else deleted the template job (fetch): every runner retired and purged, the template left gone. */
  | { type: 'FORGET' }
  | RunnerReport;

export const environmentActorId = (environmentId: number): string => `environment:${environmentId}`;

const without = (ids: readonly string[], id: string): string[] => ids.filter((other) => other !== id);

/** The actors of these runners (one that has ended is gone, and has said so). */
const actorsOf = (context: EnvironmentContext, ids: readonly string[]): AnyActorRef[] => ids.flatMap((id) => context.runnerActors.get(id) ?? []);

/** The wait after `failures` runners in a row failed: initialMs × 2^(failures-1), at most maxMs. */
export function backoffMs(context: Pick<EnvironmentContext, 'backoff' | 'failures'>): number {
  return Math.min(context.backoff.maxMs, context.backoff.initialMs * 2 ** Math.max(0, context.failures - 1));
}

/**
 * A new spec for the environment; with `replace`, its idle and provisioning runners retired (by
 * `retire`) and dropped from the pool, which then starts runners of the new spec.
 */
function takeSpec(
  context: EnvironmentContext,
  spec: ResolvedEnvironmentSpec,
  templateKey: string,
  replace: boolean,
  reason: string,
  retire: (runner: AnyActorRef, reason: string) => void,
): Pick<EnvironmentContext, 'spec' | 'templateKey' | 'idle' | 'provisioning'> {
  const replaced = replace ? [...context.idle, ...context.provisioning] : [];
  for (const runner of actorsOf(context, replaced)) retire(runner, reason);
  return {
    spec,
    templateKey,
    idle: context.idle.filter((id) => !replaced.includes(id)),
    provisioning: context.provisioning.filter((id) => !replaced.includes(id)),
  };
}

function deficit(context: EnvironmentContext): number {
  return context.spec.prewarmingPoolSize - context.idle.length - context.provisioning.length;
}

export const environmentMachine = setup({
  types: {
    input: {} as EnvironmentInput,
    context: {} as EnvironmentContext,
    events: {} as EnvironmentEvent,
  },
  actors: {
    registerTemplate: fromPromise<void, { io: EnvironmentIo; spec: ResolvedEnvironmentSpec }>(({ input }) => input.io.registerTemplate(input)),
    deregisterTemplate: fromPromise<void, { io: EnvironmentIo; environmentId: number }>(({ input }) => input.io.deregisterTemplate(input)),
  },
  guards: {
    registersFirst: ({ context }) => !context.templateReady,
    hasIdle: ({ context }) => context.idle.length > 0,
    surplus: ({ context }) => deficit(context) < 0,
    needsRunners: ({ context }) => context.templateReady && deficit(context) > 0 && !(context.probing && context.provisioning.length > 0),
    failedRunner: ({ event }) => event.type === 'RUNNER.STOPPING' && event.failed,
    noRunners: ({ context }) => context.runners.length === 0,
    templateGone: ({ context }) => context.templateGone,
  },
  actions: {
    claimIdle: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'CLAIM') return;
      const [runnerId, ...rest] = context.idle;
      if (runnerId === undefined) return;
      enqueue.assign({ idle: rest, used: [...context.used, runnerId], claim: { claimId: event.claimId, runnerId } });
      const runner = context.runnerActors.get(runnerId);
      if (runner !== undefined) enqueue.sendTo(runner, { type: 'CLAIM', timeoutMs: event.timeoutMs, at: event.at });
    }),
    refuseClaim: assign({ claim: ({ event }) => (event.type === 'CLAIM' ? { claimId: event.claimId, runnerId: undefined } : undefined) }),
    startRunners: enqueueActions(({ context, enqueue, self }) => {
      const count = context.probing ? 1 : deficit(context);
      const ids = Array.from({ length: count }, () => context.newRunnerId());
      enqueue.assign({ provisioning: [...context.provisioning, ...ids], runners: [...context.runners, ...ids], forcePulls: Math.max(0, context.forcePulls - count) });
      for (const [index, runnerId] of ids.entries()) {
        const forcePull = index < context.forcePulls;
        const input: RunnerInput = { runnerId, environmentId: context.environmentId, spec: context.spec, io: context.io, templateKey: context.templateKey, forcePull };
        enqueue(() => context.runnerActors.start(input, self));
      }
    }),
    startRecovered: enqueueActions(({ context, enqueue, self }) => {
      for (const input of context.recovered) enqueue(() => context.runnerActors.start(input, self));
      enqueue.assign({ recovered: [] });
    }),
    // The newest first: provisioning runners, then idle ones.
    retireSurplus: enqueueActions(({ context, enqueue }) => {
      const surplus = -deficit(context);
      const retired = [...context.provisioning, ...context.idle].reverse().slice(0, surplus);
      for (const runner of actorsOf(context, retired)) enqueue.sendTo(runner, { type: 'RETIRE', reason: 'more idle runners than the pool size' });
      enqueue.assign({ idle: context.idle.filter((id) => !retired.includes(id)), provisioning: context.provisioning.filter((id) => !retired.includes(id)) });
    }),
    markIdle: assign(({ context, event }) => {
      if (event.type !== 'RUNNER.IDLE' || !context.runners.includes(event.runnerId) || context.used.includes(event.runnerId)) return {};
      return {
        idle: [...without(context.idle, event.runnerId), event.runnerId],
        provisioning: without(context.provisioning, event.runnerId),
        failures: 0,
        probing: false,
        lastStartupMs: event.startupMs,
        started: context.started + 1,
      };
    }),
    markStarting: assign(({ context, event }) => {
      if (event.type !== 'RUNNER.STARTING' || !context.idle.includes(event.runnerId)) return {};
      return { idle: without(context.idle, event.runnerId), provisioning: [...context.provisioning, event.runnerId] };
    }),
    markStopping: assign(({ context, event }) => {
      if (event.type !== 'RUNNER.STOPPING') return {};
      const { runnerId } = event;
      return {
        idle: without(context.idle, runnerId),
        provisioning: without(context.provisioning, runnerId),
        used: without(context.used, runnerId),
        failures: context.failures + (event.failed ? 1 : 0),
        lastError: event.failed ? `runner ${runnerId}: ${event.reason}` : context.lastError,
      };
    }),
    startProbing: assign({ probing: true }),
    // Its actor has ended (the report is its final state's).
    forgetRunner: assign(({ context, event }) => {
      if (event.type !== 'RUNNER.DESTROYED') return {};
      const { runnerId } = event;
      return {
        runners: without(context.runners, runnerId),
        idle: without(context.idle, runnerId),
        provisioning: without(context.provisioning, runnerId),
        used: without(context.used, runnerId),
      };
    }),
    retireAll: enqueueActions(({ context, enqueue }) => {
      const reason = context.templateGone ? 'its environment was deleted from Nomad' : 'its environment was deleted';
      for (const runner of actorsOf(context, context.runners)) enqueue.sendTo(runner, { type: 'RETIRE', reason });
      enqueue.assign({ idle: [], provisioning: [], used: [] });
    }),
    acceptTemplate: assign({ templateReady: true }),
    recordError: assign({ lastError: ({ event }) => errorText(event) }),
    holdUpdate: assign({
      pendingUpdate: ({ event }) => (event.type === 'UPDATE' ? { requestId: event.requestId, spec: event.spec, templateKey: event.templateKey, pull: event.pull } : undefined),
    }),
    /**
     * A new template, or a re-PUT that pulls: the idle and provisioning runners are replaced (by
     * runners pulling their image again); used ones stay, their users' work with them, and get
     * the new image when they are returned.
     */
    applyUpdate: enqueueActions(({ context, enqueue }) => {
      const update = context.pendingUpdate;
      if (update === undefined) return;
      const replace = update.pull || update.templateKey !== context.templateKey;
      enqueue.assign({
        ...takeSpec(context, update.spec, update.templateKey, replace, 'its environment was updated', (runner, reason) => enqueue.sendTo(runner, { type: 'RETIRE', reason })),
        pendingUpdate: undefined,
        update: { requestId: update.requestId, error: undefined },
        forcePulls: update.pull ? update.spec.prewarmingPoolSize : context.forcePulls,
      });
    }),
    // Someone else's template: taken as it is; idle and provisioning runners of another key replaced.
    applyRefresh: enqueueActions(({ context, enqueue, event }) => {
      if (event.type !== 'REFRESH') return;
      const replace = event.templateKey !== context.templateKey;
      enqueue.assign(takeSpec(context, event.spec, event.templateKey, replace, 'its environment was changed in Nomad', (runner, reason) => enqueue.sendTo(runner, { type: 'RETIRE', reason })));
    }),
    forgetTemplate: assign({ templateGone: true }),
    refuseUpdate: assign(({ context, event }) => ({
      pendingUpdate: undefined,
      update: context.pendingUpdate && { requestId: context.pendingUpdate.requestId, error: errorText(event) },
      lastError: errorText(event),
    })),
  },
  delays: {
    backoff: ({ context }) => backoffMs(context),
    retryRemoval: 5_000,
  },
}).createMachine({
  id: 'environment',
  context: ({ input }) => {
    const byPhase = (phase: string): string[] => input.recovered.filter((r) => r.recovered?.phase === phase).map((r) => r.runnerId);
    return {
      environmentId: input.spec.id,
      spec: input.spec,
      io: input.io,
      runnerActors: input.runnerActors,
      recovered: input.recovered,
      templateKey: input.templateKey,
      templateReady: !input.register,
      idle: byPhase('idle'),
      provisioning: byPhase('starting'),
      used: byPhase('used'),
      runners: input.recovered.map((r) => r.runnerId),
      failures: 0,
      probing: false,
      claim: undefined,
      pendingUpdate: undefined,
      update: undefined,
      lastStartupMs: undefined,
      started: 0,
      lastError: undefined,
      forcePulls: input.register ? input.spec.prewarmingPoolSize : 0,
      templateGone: false,
      newRunnerId: input.newRunnerId,
      backoff: { initialMs: input.backoff?.initialMs ?? 1_000, maxMs: input.backoff?.maxMs ?? 60_000 },
    };
  },
  entry: 'startRecovered',
  initial: 'live',
  states: {
    live: {
      type: 'parallel',
      on: {
        'RUNNER.IDLE': { actions: 'markIdle' },
        'RUNNER.STARTING': { actions: 'markStarting' },
        'RUNNER.STOPPING': [
          { guard: 'failedRunner', target: '.pool.backingOff', reenter: true, actions: 'markStopping' },
          { actions: 'markStopping' },
        ],
        'RUNNER.DESTROYED': { actions: 'forgetRunner' },
        DELETE: 'deleting',
        FORGET: { target: 'deleting', actions: 'forgetTemplate' },
      },
      states: {
        template: {
          initial: 'deciding',
          states: {
            deciding: { always: [{ guard: 'registersFirst', target: 'registering' }, { target: 'registered' }] },
            registering: {
              invoke: {
                src: 'registerTemplate',
                input: ({ context }) => ({ io: context.io, spec: context.spec }),
                onDone: { target: 'registered', actions: 'acceptTemplate' },
                onError: { target: '#environment.failed', actions: 'recordError' },
              },
            },
            registered: { on: { UPDATE: { target: 'updating', actions: 'holdUpdate' }, REFRESH: { actions: 'applyRefresh' } } },
            updating: {
              invoke: {
                src: 'registerTemplate',
                input: ({ context }) => ({ io: context.io, spec: context.pendingUpdate?.spec ?? context.spec }),
                onDone: { target: 'registered', actions: 'applyUpdate' },
                onError: { target: 'registered', actions: 'refuseUpdate' },
              },
            },
          },
        },
        pool: {
          initial: 'ready',
          states: {
            ready: {
              always: [
                { guard: 'surplus', actions: 'retireSurplus' },
                { guard: 'needsRunners', actions: 'startRunners' },
              ],
              on: { CLAIM: [{ guard: 'hasIdle', target: 'refilling', actions: 'claimIdle' }, { actions: 'refuseClaim' }] },
            },
            // A claim's replacement is made just after its step: the claim itself stays a lookup.
            refilling: {
              after: { 0: 'ready' },
              on: { CLAIM: [{ guard: 'hasIdle', actions: 'claimIdle' }, { actions: 'refuseClaim' }] },
            },
            backingOff: {
              always: { guard: 'surplus', actions: 'retireSurplus' },
              after: { backoff: { target: 'ready', actions: 'startProbing' } },
              on: { CLAIM: [{ guard: 'hasIdle', actions: 'claimIdle' }, { actions: 'refuseClaim' }] },
            },
          },
        },
      },
    },
    deleting: {
      entry: 'retireAll',
      always: { guard: 'noRunners', target: 'removingTemplate' },
      on: { 'RUNNER.DESTROYED': { actions: 'forgetRunner' } },
    },
    removingTemplate: {
      initial: 'deciding',
      states: {
        deciding: { always: [{ guard: 'templateGone', target: '#environment.deleted' }, { target: 'deregistering' }] },
        deregistering: {
          invoke: {
            src: 'deregisterTemplate',
            input: ({ context }) => ({ io: context.io, environmentId: context.environmentId }),
            onDone: '#environment.deleted',
            onError: { target: 'retrying', actions: 'recordError' },
          },
        },
        retrying: { after: { retryRemoval: 'deregistering' } },
      },
    },
    deleted: { type: 'final' },
    failed: { type: 'final' },
  },
});

export type EnvironmentActor = ActorRefFrom<typeof environmentMachine>;
