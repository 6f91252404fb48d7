/**
 * The evaluations of the pools' writes, each followed to its outcome by an actor of
 * machines/evaluation.ts, as the supervisor's monitorEvaluation follows one, but as root actors in a
 * Map keyed by the evaluation each follows now: a pool under churn follows one evaluation per
 * claim, and as children of the supervisor's actor each would cost O(evaluations followed) to start
 * and stop (XState copies a parent's children), with every evaluation update of the cluster a step
 * of the supervisor's actor. An update reaches the one actor following its evaluation.
 */
import { createActor, type ActorRefFrom } from 'xstate';
import type { evaluationMachine } from '../../machines/evaluation.js';
import type { EvaluationOutcome, EvaluationView } from '../../machines/evaluationOutcome.js';
import { evaluationActorId } from '../../machines/supervisor.js';
import type { Clock } from '../clock/index.js';
import type { InspectionObserver } from '../health/inspection.js';
import type { NomadClient } from '../nomad/client.js';
import { evaluationMachineOver } from '../supervisor/evaluationReads.js';
import { PoolsStoppedError } from './errors.js';

type EvaluationActor = ActorRefFrom<typeof evaluationMachine>;

export interface EvaluationFollowersOptions {
  nomad: NomadClient;
  clock: Clock;
  /** Inspection events of every follower, as of the supervisor's own actors. */
  inspect?: InspectionObserver;
  /** Each evaluation followed to its end, with its outcome (counted in warden_evaluations_total). */
  ended?: (outcome: EvaluationOutcome) => void;
}

export class EvaluationFollowers {
  /** By the evaluation each follows now (it moves along NextEval). */
  private readonly following = new Map<string, EvaluationActor>();
  /** By the evaluation each was asked for: one follower however many wait on it. */
  private readonly outcomes = new Map<string, Promise<EvaluationOutcome>>();
  private readonly machine: typeof evaluationMachine;
  private streamUp = false;
  private stopped = false;

  constructor(private readonly options: EvaluationFollowersOptions) {
    this.machine = evaluationMachineOver(options.nomad);
  }

  /** The evaluation's outcome, in the Nomad CLI's terms; rejects with PoolsStoppedError when the pools stop first. */
  follow(evalId: string): Promise<EvaluationOutcome> {
    const known = this.outcomes.get(evalId);
    if (known !== undefined) return known;
    if (this.stopped) return Promise.reject(new PoolsStoppedError(`evaluation ${evalId} was followed`));
    const { clock, inspect } = this.options;
    const actor = createActor(this.machine, { id: evaluationActorId(evalId), clock, ...(inspect ? { inspect } : {}), input: { evalId, streamUp: this.streamUp } });
    let current = evalId;
    this.following.set(current, actor);
    const unfollowCurrent = (): void => {
      if (this.following.get(current) === actor) this.following.delete(current);
    };
    const forget = (): void => {
      unfollowCurrent();
      this.outcomes.delete(evalId);
    };
    const outcome = new Promise<EvaluationOutcome>((resolve, reject) => {
      actor.subscribe({
        next: ({ context }) => {
          if (context.evalId === current) return;
          unfollowCurrent();
          current = context.evalId;
          this.following.set(current, actor);
        },
        complete: () => {
          forget();
          const { output } = actor.getSnapshot();
          if (output !== undefined) {
            this.options.ended?.(output);
            resolve(output);
          } else reject(new PoolsStoppedError(`evaluation ${evalId} was followed`));
        },
        error: (error: unknown) => {
          forget();
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      });
    });
    outcome.catch(() => undefined);
    this.outcomes.set(evalId, outcome);
    actor.start();
    return outcome;
  }

  /** An evaluation as the event stream delivered it: to the follower of that evaluation, if any. */
  update(evaluation: EvaluationView): void {
    this.following.get(evaluation.ID)?.send({ type: 'EVALUATION.UPDATED', evaluation });
  }

  /** Whether the event stream delivers now: without it, followers poll with blocking queries. */
  streaming(up: boolean): void {
    if (up === this.streamUp) return;
    this.streamUp = up;
    for (const actor of this.following.values()) actor.send({ type: up ? 'STREAM.UP' : 'STREAM.DOWN' });
  }

  /** Stops every follower: their outcomes reject with PoolsStoppedError. */
  stop(): void {
    this.stopped = true;
    const actors = [...this.following.values()];
    this.following.clear();
    for (const actor of actors) actor.stop();
  }
}
