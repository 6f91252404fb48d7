/**
 * The runners' actors: one root actor of machines/runner.ts per runner, in a Map, on the
 * supervisor's clock and inspected by its observer. They are not children of their environment's
 * actor because XState copies a parent's children at every spawn and stop: with children, each
 * claim (a runner stopped, its replacement started) cost O(pool), ~1.2 ms at 600 runners.
 */
import { createActor, type AnyActorRef } from 'xstate';
import { runnerActorId, runnerMachine, writeRetryMs } from '../../machines/runner.js';
import type { RunnerActors, RunnerInput, RunnerIo, RunnerReport } from '../../machines/runnerTypes.js';
import type { Clock } from '../clock/index.js';
import { errorMessage } from '../errorMessage.js';
import type { InspectionObserver } from '../health/inspection.js';
import type { RunnerActor } from './runner.js';

export interface RunnerActorsOptions {
  clock: Clock;
  /** Inspection events of every runner, as of the supervisor's own actors. */
  inspect?: InspectionObserver;
}

export class RunnerActorMap implements RunnerActors {
  private readonly actors = new Map<string, RunnerActor>();
  private stopped = false;

  constructor(private readonly options: RunnerActorsOptions) {}

  start(input: RunnerInput, environment: AnyActorRef): void {
    if (this.stopped) return;
    const { runnerId } = input;
    const { clock, inspect } = this.options;
    const actor = createActor(runnerMachine, { id: runnerActorId(runnerId), clock, ...(inspect ? { inspect } : {}), input: { ...input, environment } });
    this.actors.set(runnerId, actor);
    // A runner ends in its final state (destroyed, reported to its environment) or, on a bug, with an error.
    const forget = (): void => {
      if (this.actors.get(runnerId) === actor) this.actors.delete(runnerId);
    };
    actor.subscribe({
      complete: forget,
      error: (error: unknown) => {
        forget();
        this.failed(input, environment, error);
      },
    });
    actor.start();
  }

  /**
   * A runner's actor failed (a bug): nothing else will tell its environment or stop its job, so the
   * map does what the runner's stopping would have: its environment counts it failed and forgets it
   * (the pool replaces it, after a back-off in case the bug recurs), its executions end, and its job
   * is purged, retried on the clock until Nomad takes it.
   */
  private failed(input: RunnerInput, environment: AnyActorRef, error: unknown): void {
    if (this.stopped) return;
    const { runnerId, io } = input;
    const message = `its actor failed: ${errorMessage(error)}`;
    if (environment.getSnapshot().status === 'active') {
      environment.send({ type: 'RUNNER.STOPPING', runnerId, failed: true, reason: message } satisfies RunnerReport);
      environment.send({ type: 'RUNNER.DESTROYED', runnerId } satisfies RunnerReport);
    }
    try {
      io.endExecutions(runnerId, { kind: 'destroyed', message, failure: true });
    } catch {
      // The failure may have been this very call: the executions end with their connections instead.
    }
    this.purge(io, runnerId, 1);
  }

  private purge(io: RunnerIo, runnerId: string, attempt: number): void {
    io.deregisterRunner({ runnerId }).catch(() => {
      if (!this.stopped) this.options.clock.setTimeout(() => this.purge(io, runnerId, attempt + 1), writeRetryMs(attempt));
    });
  }

  get(runnerId: string): RunnerActor | undefined {
    return this.actors.get(runnerId);
  }

  /** Stops every runner where it is, and any started later (the supervisor stopped): nothing more is written for them, their jobs stay as they are. */
  stopAll(): void {
    this.stopped = true;
    const actors = [...this.actors.values()];
    this.actors.clear();
    for (const actor of actors) actor.stop();
  }
}
