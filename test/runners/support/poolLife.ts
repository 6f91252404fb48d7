/**
 * A pool's life in Poseidon's layout, as one script run two ways: live against a real Nomad with
 * everything the pools read recorded (test/live/poolRecording.test.ts), and over that recording on a
 * VirtualClock with no server at all (test/runners/poolLifeReplay.test.ts). Each step starts when it
 * started live, waits for the pool state it waited for live, and the states reached are compared.
 *
 *   create (pool of 2) → claim → destroy at once (issue 19's race) → claim again and keep it →
 *   re-PUT the same spec (idle runners replaced, the used one kept) → delete (every job purged)
 */
import { settle, type VirtualClock } from '../../../src/clock/index.js';
import type { RunnerPools } from '../../../src/runners/pools.js';
import type { Runner } from '../../../src/runners/runner.js';

export interface PoolLifeStep {
  name: string;
  /** Ms after the recording's start when the step began (live). */
  at: number;
  /** The pool once the step was done: each runner's state by ID, the counts. */
  state: PoolState;
}

export interface PoolState {
  idle: number;
  used: number;
  provisioning: number;
  runners: Record<string, string>;
}

/** What a live run wrote next to its recording (life.json). */
export interface PoolLife {
  environmentId: number;
  steps: PoolLifeStep[];
}

/** Runner IDs the same in the recording and its replay: `<environment>-00000000-0000-4000-8000-<n>`. */
export function sequentialRunnerIds(): (environmentId: number) => string {
  let next = 0;
  return (environmentId) => `${environmentId}-00000000-0000-4000-8000-${String(++next).padStart(12, '0')}`;
}

export function poolState(pools: RunnerPools, environmentId: number): PoolState {
  const environment = pools.environment(environmentId);
  return {
    idle: environment?.idleRunners ?? 0,
    used: environment?.usedRunners ?? 0,
    provisioning: environment?.provisioningRunners ?? 0,
    runners: Object.fromEntries((environment?.runners ?? []).map((r) => [r.id, r.state]).sort(([a], [b]) => a!.localeCompare(b!))),
  };
}

/** How a run waits: for a promise, and for a condition on the pools. */
export interface PoolLifeDriver {
  now(): number;
  /** Live: nothing; replay: the clock moved to the time the step started live. */
  startAt(at: number): Promise<void>;
  settled<T>(promise: Promise<T>): Promise<T>;
  until(done: () => boolean): Promise<void>;
}

interface ScriptStep {
  name: string;
  run(pools: RunnerPools, id: number, held: { runner?: Runner }, driver: PoolLifeDriver): Promise<void>;
}

const spec = (id: number) => ({ id, prewarmingPoolSize: 2, driver: 'raw_exec' as const, cpuLimit: 20 });
const idleCount = (pools: RunnerPools, id: number): number => pools.environment(id)?.idleRunners ?? 0;

const SCRIPT: ScriptStep[] = [
  {
    name: 'create a pool of 2',
    run: async (pools, id, _held, d) => {
      await d.settled(pools.putEnvironment(spec(id)));
      await d.until(() => idleCount(pools, id) === 2);
    },
  },
  {
    name: 'claim, and destroy at once',
    run: async (pools, id, _held, d) => {
      const runner = pools.claim(id, { inactivityTimeoutS: 0 });
      await d.settled(runner.destroy());
      await d.until(() => idleCount(pools, id) === 2);
    },
  },
  {
    name: 'claim and keep',
    run: async (pools, id, held, d) => {
      held.runner = pools.claim(id, { inactivityTimeoutS: 0 });
      await d.until(() => idleCount(pools, id) === 2);
    },
  },
  {
    name: 're-PUT the same spec',
    run: async (pools, id, _held, d) => {
      const before = pools.environment(id)!.runners.filter((r) => r.state === 'idle').map((r) => r.id);
      await d.settled(pools.putEnvironment(spec(id)));
      await d.until(() => {
        const idle = pools.environment(id)?.runners.filter((r) => r.state === 'idle').map((r) => r.id) ?? [];
        return idle.length === 2 && idle.every((r) => !before.includes(r)) && pools.environment(id)!.runners.length === 3;
      });
    },
  },
  {
    name: 'delete the environment',
    run: async (pools, id, _held, d) => {
      await d.settled(pools.deleteEnvironment(id));
    },
  },
];

/** Runs the script; with `recorded`, each step starts at its recorded time and its state is checked by the caller. */
export async function runPoolLife(pools: RunnerPools, environmentId: number, driver: PoolLifeDriver, recorded?: PoolLife): Promise<PoolLife> {
  const start = driver.now();
  const steps: PoolLifeStep[] = [];
  const held: { runner?: Runner } = {};
  for (const [index, step] of SCRIPT.entries()) {
    const at = recorded?.steps[index]?.at;
    if (at !== undefined) await driver.startAt(at);
    const began = driver.now() - start;
    await step.run(pools, environmentId, held, driver);
    steps.push({ name: step.name, at: at ?? began, state: poolState(pools, environmentId) });
  }
  return { environmentId, steps };
}

/** Waits on the live pools' own changes. */
export function liveDriver(pools: RunnerPools, now: () => number): PoolLifeDriver {
  return {
    now,
    startAt: async () => undefined,
    settled: (promise) => promise,
    until: (done) =>
      new Promise((resolve) => {
        if (done()) return resolve();
        const subscription = pools.changes$.subscribe(() => {
          if (done()) {
            subscription.unsubscribe();
            resolve();
          }
        });
      }),
  };
}

/** Moves a replay's clock from timer to timer (the recording's answers are timers) until a condition holds. */
export function replayDriver(clock: VirtualClock, start: number, endsAt: number): PoolLifeDriver {
  const step = async (done: () => boolean): Promise<void> => {
    for (;;) {
      await settle(3);
      if (done()) return;
      const next = clock.nextDue();
      if (next === undefined || next > endsAt) throw new Error(`the replay ran out at ${clock.now() - start} ms without reaching the recorded state`);
      clock.advanceTo(next);
    }
  };
  return {
    now: () => clock.now(),
    startAt: async (at) => {
      while (clock.now() < start + at) {
        await settle(3);
        const next = clock.nextDue();
        clock.advanceTo(next === undefined ? start + at : Math.min(next, start + at));
      }
    },
    settled: async (promise) => {
      let finished = false;
      const watched = promise.finally(() => (finished = true));
      watched.catch(() => undefined);
      await step(() => finished);
      return watched;
    },
    until: step,
  };
}
