import { assign, enqueueActions, setup, stopChild } from 'xstate';
import { environmentActorId, environmentMachine, type EnvironmentInput } from './environment.js';
import { evaluationMachine } from './evaluation.js';
import type { EvaluationView } from './evaluationOutcome.js';
import { execSessionMachine, type ExecSessionInput } from './execSession.js';

/**
 * The supervisor of one Nomad cluster (or one scope of it).
 *
 *   running ── connection: connecting ──► streaming ──► backingOff ──► connecting …
 *      │                         └──────► resyncing ──► streaming        (list, then watch)
 *      └─STOP─► stopped (final: every child ends with it)
 *
 * The connection states mirror the event stream's, so a user (or the inspector) sees whether the
 * supervisor is live. Evaluations and exec sessions are its child actors, few and short-lived;
 * so are the runner pools' environments (src/runners gives each its Nomad writes in its input);
 * allocation health actors are NOT children (spawning costs O(siblings) in XState): the runtime in
 * src/supervisor keeps them in a registry of root actors on the same clock.
 */

export interface ConnectionContext {
  /** Consecutive failed attempts; 0 once streaming. */
  attempt: number;
  /** Why the last attempt failed (already free of secrets). */
  lastError: string | undefined;
  /** Back-off before the next attempt. */
  retryInMs: number | undefined;
  /** Raft index of the last batch delivered. */
  index: number;
}

export interface SupervisorContext {
  connection: ConnectionContext;
  /** Ids of the evaluation children running now. */
  evaluations: string[];
  /** Ids of the exec session children running now. */
  execSessions: string[];
  /** Ids of the environment children (runner pools) alive now. */
  environments: number[];
}

export type SupervisorEvent =
  | { type: 'CONNECTION.CONNECTING' }
  | { type: 'CONNECTION.STREAMING'; index?: number }
  | { type: 'CONNECTION.RESYNCING' }
  | { type: 'CONNECTION.BACKING_OFF'; attempt: number; retryInMs: number; reason: string }
  | { type: 'EVALUATION.MONITOR'; evalId: string }
  | { type: 'EVALUATION.UPDATED'; evaluation: EvaluationView }
  | { type: 'EXEC.START'; sessionId: string; session: Omit<ExecSessionInput, 'sessionId'> }
  | { type: 'EXEC.CANCEL'; sessionId: string }
  /** A runner pool's environment: `logic` is machines/environment.ts provided with its Nomad writes. */
  | { type: 'ENVIRONMENT.START'; environmentId: number; input: EnvironmentInput }
  | { type: 'STOP' };

const EVALUATION_PREFIX = 'evaluation:';
const EXEC_PREFIX = 'exec:';
const ENVIRONMENT_PREFIX = environmentActorId(0).replace(/0$/, '');

/** Child ids, also their system ids: `system.get(evaluationActorId(id))` finds the actor. */
export const evaluationActorId = (evalId: string): string => `${EVALUATION_PREFIX}${evalId}`;
export const execActorId = (sessionId: string): string => `${EXEC_PREFIX}${sessionId}`;

/** The child an actor id names (the inverse of the two above), or undefined for any other actor. */
export function childOfActorId(actorId: string): { kind: 'evaluation' | 'exec' | 'environment'; id: string } | undefined {
  if (actorId.startsWith(EVALUATION_PREFIX)) return { kind: 'evaluation', id: actorId.slice(EVALUATION_PREFIX.length) };
  if (actorId.startsWith(EXEC_PREFIX)) return { kind: 'exec', id: actorId.slice(EXEC_PREFIX.length) };
  if (actorId.startsWith(ENVIRONMENT_PREFIX)) return { kind: 'environment', id: actorId.slice(ENVIRONMENT_PREFIX.length) };
  return undefined;
}

const without = (ids: readonly string[], id: string): string[] => ids.filter((other) => other !== id);

export const supervisorMachine = setup({
  types: {
    context: {} as SupervisorContext,
    events: {} as SupervisorEvent,
  },
  actors: {
    evaluation: evaluationMachine,
    execSession: execSessionMachine,
    environment: environmentMachine,
  },
  guards: {
    evaluationIsNew: ({ context, event }) => event.type === 'EVALUATION.MONITOR' && !context.evaluations.includes(event.evalId),
    execSessionIsNew: ({ context, event }) => event.type === 'EXEC.START' && !context.execSessions.includes(event.sessionId),
    environmentIsNew: ({ context, event }) => event.type === 'ENVIRONMENT.START' && !context.environments.includes(event.environmentId),
  },
  actions: {
    recordStreaming: assign({
      connection: ({ context, event }) => ({
        ...context.connection,
        attempt: 0,
        retryInMs: undefined,
        index: (event.type === 'CONNECTION.STREAMING' ? event.index : undefined) ?? context.connection.index,
      }),
    }),
    recordBackoff: assign({
      connection: ({ context, event }) =>
        event.type === 'CONNECTION.BACKING_OFF'
          ? { ...context.connection, attempt: event.attempt, retryInMs: event.retryInMs, lastError: event.reason }
          : context.connection,
    }),
    spawnEvaluation: enqueueActions(({ context, event, enqueue, self }) => {
      if (event.type !== 'EVALUATION.MONITOR') return;
      const id = evaluationActorId(event.evalId);
      enqueue.spawnChild('evaluation', {
        id,
        systemId: id,
        input: { evalId: event.evalId, streamUp: self.getSnapshot().matches({ running: 'streaming' }) },
      });
      enqueue.assign({ evaluations: [...context.evaluations, event.evalId] });
    }),
    // Only to the children following this evaluation (each follows one at a time, the next of a
    // chain after the first): sent to every child, each update cost a step of each of them.
    forwardToEvaluations: enqueueActions(({ context, event, enqueue, system }) => {
      if (event.type !== 'EVALUATION.UPDATED') return;
      for (const id of context.evaluations) {
        const followed = (system.get(evaluationActorId(id))?.getSnapshot() as { context?: { evalId?: string } } | undefined)?.context?.evalId;
        if (followed === event.evaluation.ID) enqueue.sendTo(evaluationActorId(id), event);
      }
    }),
    tellEvaluations: enqueueActions(({ context, enqueue }, params: { type: 'STREAM.UP' | 'STREAM.DOWN' }) => {
      for (const id of context.evaluations) enqueue.sendTo(evaluationActorId(id), params);
    }),
    spawnExecSession: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'EXEC.START') return;
      const id = execActorId(event.sessionId);
      enqueue.spawnChild('execSession', { id, systemId: id, input: { ...event.session, sessionId: event.sessionId } });
      enqueue.assign({ execSessions: [...context.execSessions, event.sessionId] });
    }),
    spawnEnvironment: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'ENVIRONMENT.START') return;
      const id = environmentActorId(event.environmentId);
      enqueue.spawnChild('environment', { id, systemId: id, input: event.input });
      enqueue.assign({ environments: [...context.environments, event.environmentId] });
    }),
    cancelExecSession: enqueueActions(({ context, event, enqueue }) => {
      if (event.type === 'EXEC.CANCEL' && context.execSessions.includes(event.sessionId)) {
        enqueue.sendTo(execActorId(event.sessionId), { type: 'CANCEL' });
      }
    }),
    // A finished (or failed) child leaves the lists (its output stays with whoever awaited it).
    forgetFinishedChild: enqueueActions(({ context, event, enqueue }) => {
      const id = event.type.replace(/^xstate\.(done|error)\.actor\./, '');
      const child = childOfActorId(id);
      if (child?.kind === 'evaluation') enqueue.assign({ evaluations: without(context.evaluations, child.id) });
      else if (child?.kind === 'exec') enqueue.assign({ execSessions: without(context.execSessions, child.id) });
      else if (child?.kind === 'environment') enqueue.assign({ environments: context.environments.filter((id) => String(id) !== child.id) });
      enqueue(stopChild(id));
    }),
  },
}).createMachine({
  id: 'supervisor',
  context: {
    connection: { attempt: 0, lastError: undefined, retryInMs: undefined, index: 0 },
    evaluations: [],
    execSessions: [],
    environments: [],
  },
  initial: 'running',
  states: {
    running: {
      on: {
        'CONNECTION.CONNECTING': '.connecting',
        'CONNECTION.STREAMING': { target: '.streaming', actions: 'recordStreaming' },
        'CONNECTION.RESYNCING': '.resyncing',
        'CONNECTION.BACKING_OFF': { target: '.backingOff', actions: 'recordBackoff' },
        // One child per evaluation, however many callers wait on it.
        'EVALUATION.MONITOR': { guard: 'evaluationIsNew', actions: 'spawnEvaluation' },
        'EVALUATION.UPDATED': { actions: 'forwardToEvaluations' },
        'EXEC.START': { guard: 'execSessionIsNew', actions: 'spawnExecSession' },
        'EXEC.CANCEL': { actions: 'cancelExecSession' },
        'ENVIRONMENT.START': { guard: 'environmentIsNew', actions: 'spawnEnvironment' },
        'xstate.done.actor.*': { actions: 'forgetFinishedChild' },
        // Unhandled, a child's error would end the supervisor with it.
        'xstate.error.actor.*': { actions: 'forgetFinishedChild' },
        STOP: 'stopped',
      },
      initial: 'connecting',
      states: {
        connecting: {},
        streaming: {
          entry: { type: 'tellEvaluations', params: { type: 'STREAM.UP' } },
          exit: { type: 'tellEvaluations', params: { type: 'STREAM.DOWN' } },
        },
        resyncing: {},
        backingOff: {},
      },
    },
    stopped: { type: 'final' },
  },
});
