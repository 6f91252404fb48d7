/** The evaluation machine (machines/evaluation.ts) reading its evaluation from a Nomad client. */
import { fromPromise } from 'xstate';
import { evaluationMachine, type ReadEvaluationInput } from '../../machines/evaluation.js';
import type { EvaluationView } from '../../machines/evaluationOutcome.js';
import type { NomadClient } from '../nomad/client.js';

/** Reads plainly while the stream is up (index 0); once the machine knows an index, a blocking query that waits for a change. */
export function evaluationMachineOver(nomad: Pick<NomadClient, 'getEvaluation'>): typeof evaluationMachine {
  return evaluationMachine.provide({
    actors: {
      readEvaluation: fromPromise<EvaluationView, ReadEvaluationInput>(async ({ input, signal }) => {
        const query = input.index > 0 ? { index: input.index, waitMs: 60_000 } : {};
        return (await nomad.getEvaluation(input.evalId, { ...query, signal })).body;
      }),
    },
  });
}
