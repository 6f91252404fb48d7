import { assign, fromPromise, setup } from 'xstate';
import {
  evaluationNotFound,
  evaluationOutcome,
  isTerminalEvaluation,
  type EvaluationOutcome,
  type EvaluationView,
} from './evaluationOutcome.js';

/**
 * Follows one evaluation to complete / failed / canceled, as `nomad job run` monitors it.
 *
 *   reading ──► (deciding) ──► watching ⇄ polling        stream updates, or blocking queries while the stream is down
 *      ▲             │  └────► waitingForNext ──► reading  NextEval after its Wait, as the CLI does
 *      └─ retrying ◄─┘  └────► done (final: EvaluationOutcome)
 *
 * It reads the evaluation first, so one that finished before monitoring began is judged at once.
 * The read is an invoked actor (`readEvaluation`, provided by the supervisor): index 0 means read
 * now, a higher index is a blocking query that returns once the evaluation changes past it.
 */

export interface EvaluationMachineInput {
  evalId: string;
  /** Whether the event stream is delivering right now; if not, the machine polls. */
  streamUp: boolean;
}

export interface ReadEvaluationInput {
  evalId: string;
  /** 0: read at once; otherwise block until the evaluation's ModifyIndex passes it. */
  index: number;
}

export interface EvaluationContext {
  /** The evaluation followed now (moves along NextEval). */
  evalId: string;
  /** Every evaluation followed, in order. */
  chain: string[];
  evaluation: EvaluationView | undefined;
  streamUp: boolean;
  outcome: EvaluationOutcome | undefined;
}

export type EvaluationEvent =
  | { type: 'EVALUATION.UPDATED'; evaluation: EvaluationView }
  | { type: 'STREAM.UP' }
  | { type: 'STREAM.DOWN' };

/** How long to wait before reading again after a failed read. */
export const READ_RETRY_MS = 1_000;

/** The longest wait a read's Retry-After (a 429 or 503 that says when to come back) is honoured for. */
export const READ_RETRY_MAX_MS = 30_000;

/** The wait after a failed read: READ_RETRY_MS, or the Retry-After its error carries (src/nomad NomadHttpError), capped. */
function readRetryMs(event: unknown): number {
  const asked = (event as { error?: { retryAfterMs?: unknown } }).error?.retryAfterMs;
  return typeof asked === 'number' && Number.isFinite(asked) ? Math.max(READ_RETRY_MS, Math.min(asked, READ_RETRY_MAX_MS)) : READ_RETRY_MS;
}

function isNotFound(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { status?: unknown }).status === 404;
}

function modifyIndex(evaluation: EvaluationView | undefined): number {
  return evaluation?.ModifyIndex ?? 0;
}

function newer(known: EvaluationView | undefined, read: EvaluationView): EvaluationView {
  return modifyIndex(read) >= modifyIndex(known) ? read : (known ?? read);
}

/** The evaluation a finished read returned (setup types only the machine's own events). */
const readResult = (event: unknown): EvaluationView => (event as { output: EvaluationView }).output;

export const evaluationMachine = setup({
  types: {
    input: {} as EvaluationMachineInput,
    context: {} as EvaluationContext,
    events: {} as EvaluationEvent,
    output: {} as EvaluationOutcome,
  },
  actors: {
    // Replaced by the supervisor with a real read; reading without one is a wiring error.
    readEvaluation: fromPromise<EvaluationView, ReadEvaluationInput>(async () => {
      throw new Error('evaluationMachine needs a readEvaluation actor (machine.provide)');
    }),
  },
  guards: {
    concernsThisEvaluation: ({ context, event }) =>
      event.type === 'EVALUATION.UPDATED' &&
      event.evaluation.ID === context.evalId &&
      modifyIndex(event.evaluation) >= modifyIndex(context.evaluation),
    finished: ({ context }) => context.evaluation !== undefined && isTerminalEvaluation(context.evaluation),
    followsNext: ({ context }) =>
      context.evaluation !== undefined && isTerminalEvaluation(context.evaluation) && !!context.evaluation.NextEval,
    streamUp: ({ context }) => context.streamUp,
    notFound: ({ event }) => isNotFound((event as { error?: unknown }).error),
  },
  actions: {
    recordUpdate: assign({
      evaluation: ({ event, context }) => (event.type === 'EVALUATION.UPDATED' ? event.evaluation : context.evaluation),
    }),
    judge: assign({
      outcome: ({ context }) => (context.evaluation ? evaluationOutcome(context.evaluation, context.chain) : undefined),
    }),
    // A stream update may have overtaken the read: keep the newer one.
    keepNewerRead: assign({ evaluation: ({ context, event }) => newer(context.evaluation, readResult(event)) }),
    recordNotFound: assign({ outcome: ({ context }) => evaluationNotFound(context.evalId, context.chain) }),
    markStreamUp: assign({ streamUp: true }),
    markStreamDown: assign({ streamUp: false }),
    moveToNext: assign(({ context }) => {
      const next = context.evaluation?.NextEval ?? context.evalId;
      return { evalId: next, chain: [...context.chain, next], evaluation: undefined };
    }),
  },
  delays: {
    nextEvalWait: ({ context }) => Math.max(0, (context.evaluation?.Wait ?? 0) / 1e6),
    // Entered on a read's error event, which the delay sees.
    readRetry: ({ event }) => readRetryMs(event),
  },
}).createMachine({
  id: 'evaluation',
  context: ({ input }) => ({
    evalId: input.evalId,
    chain: [input.evalId],
    evaluation: undefined,
    streamUp: input.streamUp,
    outcome: undefined,
  }),
  on: {
    'STREAM.UP': { actions: 'markStreamUp' },
    'STREAM.DOWN': { actions: 'markStreamDown' },
  },
  initial: 'reading',
  states: {
    reading: {
      invoke: {
        src: 'readEvaluation',
        input: ({ context }) => ({ evalId: context.evalId, index: 0 }),
        onDone: { target: 'deciding', actions: 'keepNewerRead' },
        onError: [{ guard: 'notFound', target: 'done', actions: 'recordNotFound' }, { target: 'retrying' }],
      },
      on: { 'EVALUATION.UPDATED': { guard: 'concernsThisEvaluation', actions: 'recordUpdate' } },
    },
    deciding: {
      always: [
        { guard: 'followsNext', target: 'waitingForNext' },
        { guard: 'finished', target: 'done', actions: 'judge' },
        { guard: 'streamUp', target: 'watching' },
        { target: 'polling' },
      ],
    },
    watching: {
      on: {
        'EVALUATION.UPDATED': { guard: 'concernsThisEvaluation', target: 'deciding', actions: 'recordUpdate' },
        'STREAM.DOWN': { target: 'polling', actions: 'markStreamDown' },
      },
    },
    polling: {
      invoke: {
        src: 'readEvaluation',
        input: ({ context }) => ({ evalId: context.evalId, index: modifyIndex(context.evaluation) }),
        onDone: { target: 'deciding', actions: 'keepNewerRead' },
        onError: { target: 'retrying' },
      },
      on: {
        'EVALUATION.UPDATED': { guard: 'concernsThisEvaluation', target: 'deciding', actions: 'recordUpdate' },
        'STREAM.UP': { target: 'watching', actions: 'markStreamUp' },
      },
    },
    retrying: {
      after: { readRetry: 'reading' },
      on: { 'EVALUATION.UPDATED': { guard: 'concernsThisEvaluation', target: 'deciding', actions: 'recordUpdate' } },
    },
    waitingForNext: {
      after: { nextEvalWait: { target: 'reading', actions: 'moveToNext' } },
    },
    done: { type: 'final' },
  },
  output: ({ context }) => context.outcome ?? evaluationNotFound(context.evalId, context.chain),
});
