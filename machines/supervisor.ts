import { assign, enqueueActions, setup, stopChild } from 'xstate';
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
}

export type SupervisorEvent =
  | { type: 'CONNECTION.CONNECTING' }
  | { type: 'CONNECTION.STREAMING'; index?: number }
  | { type: 'CONNECTION.RESYNCING' }
  | { type: 'CONNECTION.BACKING_OFF'; attempt: number; retryInMs: number; reason: string }
  | { type: 'STREAM.INDEX'; index: number }
  | { type: 'EVALUATION.MONITOR'; evalId: string }
  | { type: 'EVALUATION.UPDATED'; evaluation: EvaluationView }
  | { type: 'EXEC.START'; sessionId: string; session: ExecSessionInput }
  | { type: 'EXEC.CANCEL'; sessionId: string }
  | { type: 'STOP' };

/** Child ids, also their system ids: `system.get(evaluationActorId(id))` finds the actor. */
export const evaluationActorId = (evalId: string): string => `evaluation:${evalId}`;
export const execActorId = (sessionId: string): string => `exec:${sessionId}`;

const without = (ids: readonly string[], id: string): string[] => ids.filter((other) => other !== id);

export const supervisorMachine = setup({
  types: {
    context: {} as SupervisorContext,
    events: {} as SupervisorEvent,
  },
  actors: {
    evaluation: evaluationMachine,
    execSession: execSessionMachine,
  },
  actions: {
    tellEvaluations: enqueueActions(({ context, enqueue }, params: { type: 'STREAM.UP' | 'STREAM.DOWN' }) => {
      for (const id of context.evaluations) enqueue.sendTo(evaluationActorId(id), params);
    }),
  },
}).createMachine({
  id: 'supervisor',
  context: {
    connection: { attempt: 0, lastError: undefined, retryInMs: undefined, index: 0 },
    evaluations: [],
    execSessions: [],
  },
  initial: 'running',
  states: {
    running: {
      on: {
        'CONNECTION.CONNECTING': '.connecting',
        'CONNECTION.STREAMING': {
          target: '.streaming',
          actions: assign({
            connection: ({ context, event }) => ({
              ...context.connection,
              attempt: 0,
              retryInMs: undefined,
              index: event.index ?? context.connection.index,
            }),
          }),
        },
        'CONNECTION.RESYNCING': '.resyncing',
        'CONNECTION.BACKING_OFF': {
          target: '.backingOff',
          actions: assign({
            connection: ({ context, event }) => ({
              ...context.connection,
              attempt: event.attempt,
              retryInMs: event.retryInMs,
              lastError: event.reason,
            }),
          }),
        },
        'STREAM.INDEX': {
          actions: assign({ connection: ({ context, event }) => ({ ...context.connection, index: event.index }) }),
        },
        'EVALUATION.MONITOR': {
          // One child per evaluation, however many callers wait on it.
          guard: ({ context, event }) => !context.evaluations.includes(event.evalId),
          actions: enqueueActions(({ context, event, enqueue, self }) => {
            const id = evaluationActorId(event.evalId);
            enqueue.spawnChild('evaluation', {
              id,
              systemId: id,
              input: { evalId: event.evalId, streamUp: self.getSnapshot().matches({ running: 'streaming' }) },
            });
            enqueue.assign({ evaluations: [...context.evaluations, event.evalId] });
          }),
        },
        'EVALUATION.UPDATED': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            for (const id of context.evaluations) enqueue.sendTo(evaluationActorId(id), event);
          }),
        },
        'EXEC.START': {
          guard: ({ context, event }) => !context.execSessions.includes(event.sessionId),
          actions: enqueueActions(({ context, event, enqueue }) => {
            const id = execActorId(event.sessionId);
            enqueue.spawnChild('execSession', { id, systemId: id, input: event.session });
            enqueue.assign({ execSessions: [...context.execSessions, event.sessionId] });
          }),
        },
        'EXEC.CANCEL': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            if (context.execSessions.includes(event.sessionId)) enqueue.sendTo(execActorId(event.sessionId), { type: 'CANCEL' });
          }),
        },
        // A finished child leaves the lists (its output stays with whoever awaited it).
        'xstate.done.actor.*': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            const id = event.type.slice('xstate.done.actor.'.length);
            if (id.startsWith('evaluation:')) {
              enqueue.assign({ evaluations: without(context.evaluations, id.slice('evaluation:'.length)) });
            } else if (id.startsWith('exec:')) {
              enqueue.assign({ execSessions: without(context.execSessions, id.slice('exec:'.length)) });
            }
            enqueue(stopChild(id));
          }),
        },
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
