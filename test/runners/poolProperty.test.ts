/**
 * The pool under churn, as a property on the VirtualClock: an environment actor over a simulated
 * Nomad (writes that take time and fail when told, allocations that start, fail, get lost or
 * restart) takes random claims, releases, losses, failures, pool-size and template changes, and
 * runners whose actor fails on a bug as they stop (as a throwing io would make it), with
 * these invariants checked after every step:
 * - no runner is ever handed to two claims;
 * - never over-provisioned: idle + provisioning ≤ prewarmingPoolSize;
 * - never under-provisioned: whenever idle + provisioning < prewarmingPoolSize, the pool is
 *   refilling right after a claim, backing off after failures, or probing with a runner on its way;
 * - the environment's lists agree with its runners' own states;
 * and, once failures stop and time passes, the pool is full and nothing of a gone runner is left
 * on the simulated cluster.
 */
import { fc } from '@fast-check/jest';
import { createActor } from 'xstate';
import { VirtualClock, settle } from '../../src/clock/index.js';
import { environmentMachine, type EnvironmentIo } from '../../machines/environment.js';
import type { RunnerAllocation } from '../../machines/runnerTypes.js';
import { checkEnvironmentSpec, runnerTemplateKey } from '../../src/runners/poseidonFormat.js';
import { RunnerActorMap } from '../../src/runners/runnerActors.js';

type Step =
  | { kind: 'claim'; timeoutS: number }
  | { kind: 'release'; pick: number }
  | { kind: 'lose'; pick: number; used: boolean }
  | { kind: 'restart'; pick: number }
  | { kind: 'crash'; pick: number }
  | { kind: 'failPlacements'; times: number }
  | { kind: 'failAllocations'; times: number }
  | { kind: 'failWrites'; times: number }
  | { kind: 'poolSize'; size: number }
  | { kind: 'template' }
  | { kind: 'advance'; ms: number };

const steps: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('claim' as const), timeoutS: fc.constantFrom(0, 1, 5, 30) }), weight: 6 },
  { arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat(20) }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('lose' as const), pick: fc.nat(20), used: fc.boolean() }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('restart' as const), pick: fc.nat(20) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('crash' as const), pick: fc.nat(20) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('failPlacements' as const), times: fc.integer({ min: 1, max: 4 }) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('failAllocations' as const), times: fc.integer({ min: 1, max: 3 }) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('failWrites' as const), times: fc.integer({ min: 1, max: 3 }) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('poolSize' as const), size: fc.integer({ min: 0, max: 5 }) }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'template' as const }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 4_000 }) }), weight: 6 },
);

/** Nomad as the pool sees it: jobs, each with one allocation that moves on the clock. */
class SimulatedNomad implements EnvironmentIo {
  readonly jobs = new Set<string>();
  readonly allocations = new Map<string, RunnerAllocation>();
  placementFailures = 0;
  allocationFailures = 0;
  writeFailures = 0;
  /** Runners whose stop throws in their actor (a bug): their actor fails instead of stopping. */
  readonly crashing = new Set<string>();
  private index = 1;
  send: (runnerId: string, allocation: RunnerAllocation) => void = () => undefined;

  constructor(private readonly clock: VirtualClock) {}

  private later<T>(ms: number, work: () => T): Promise<T> {
    return new Promise((resolve, reject) => this.clock.setTimeout(() => {
      try {
        resolve(work());
      } catch (error) {
        reject(error as Error);
      }
    }, ms));
  }

  private failWrite(): void {
    if (this.writeFailures > 0) {
      this.writeFailures -= 1;
      throw new Error('Unexpected response code: 500 (rpc error: timeout)');
    }
  }

  registerTemplate = (): Promise<void> => this.later(20, () => undefined);
  deregisterTemplate = (): Promise<void> => this.later(20, () => undefined);
  endExecutions = (runnerId: string): void => {
    if (this.crashing.delete(runnerId)) throw new Error(`a bug in runner ${runnerId}`);
  };

  registerRunner = ({ runnerId }: { runnerId: string }): Promise<void> =>
    this.later(50, () => {
      this.failWrite();
      this.jobs.add(runnerId);
      if (this.placementFailures > 0) {
        this.placementFailures -= 1;
        throw new Error(`Evaluation "x" finished with status "complete" but failed to place all allocations`);
      }
      this.place(runnerId);
    });

  markUsed = (): Promise<void> => this.later(30, () => this.failWrite());

  deregisterRunner = ({ runnerId }: { runnerId: string }): Promise<void> =>
    this.later(30, () => {
      this.failWrite();
      this.jobs.delete(runnerId);
      const allocation = this.allocations.get(runnerId);
      if (allocation && allocation.status !== 'ended') this.update(runnerId, { ...allocation, status: 'ended', reason: 'the allocation was stopped' });
    });

  place(runnerId: string): void {
    const allocation: RunnerAllocation = { allocId: `a${this.index}`, createIndex: this.index, modifyIndex: this.index, status: 'pending', ports: [], at: this.clock.now() };
    this.index += 1;
    this.update(runnerId, allocation);
    const fails = this.allocationFailures > 0;
    if (fails) this.allocationFailures -= 1;
    this.clock.setTimeout(() => {
      const current = this.allocations.get(runnerId);
      if (current?.allocId !== allocation.allocId || current.status !== 'pending') return;
      this.update(runnerId, fails ? { ...current, status: 'ended', reason: 'the allocation failed' } : { ...current, status: 'running' });
    }, 300);
  }

  update(runnerId: string, allocation: RunnerAllocation): void {
    const next = { ...allocation, modifyIndex: this.index++, at: this.clock.now() };
    this.allocations.set(runnerId, next);
    this.send(runnerId, next);
  }
}

function pick<T>(items: readonly T[], index: number): T | undefined {
  return items.length === 0 ? undefined : items[index % items.length];
}

async function runScenario(script: readonly Step[]): Promise<void> {
  const clock = new VirtualClock({ start: 0 });
  const nomad = new SimulatedNomad(clock);
  let size = 3;
  let driver = 'a';
  const spec = () => checkEnvironmentSpec({ id: 1, prewarmingPoolSize: size, driver: 'raw_exec', driverConfig: { variant: driver } });
  let ids = 0;
  const runners = new RunnerActorMap({ clock });
  const actor = createActor(environmentMachine, {
    clock,
    input: { spec: spec(), io: nomad, runnerActors: runners, templateKey: runnerTemplateKey(spec()), register: true, recovered: [], newRunnerId: () => `1-${++ids}`, backoff: { initialMs: 500, maxMs: 8_000 } },
  });
  const runner = (id: string) => runners.get(id);
  nomad.send = (id, allocation) => runner(id)?.send({ type: 'ALLOCATION.UPDATED', allocation });
  actor.start();
  const claimed = new Set<string>();
  let claimIds = 0;
  let updates = 0;

  const flush = async (): Promise<void> => {
    // Promise continuations of the simulated writes: no real I/O, a few turns suffice.
    await settle(3);
  };
  const advance = async (ms: number): Promise<void> => {
    const until = clock.now() + ms;
    while (clock.now() < until) {
      const due = clock.nextDue();
      clock.advanceTo(due !== undefined && due <= until ? Math.max(due, clock.now()) : until);
      await flush();
      if (due === undefined || due > until) break;
    }
    if (clock.now() < until) clock.advanceTo(until);
    await flush();
  };

  const check = (label: string): void => {
    const snapshot = actor.getSnapshot();
    const { context } = snapshot;
    const where = `${label} at ${clock.now()} ms`;
    const supply = context.idle.length + context.provisioning.length;
    const poolSize = context.spec.prewarmingPoolSize;
    expect({ where, over: supply > poolSize }).toEqual({ where, over: false });
    if (context.templateReady && supply < poolSize) {
      const backingOff = snapshot.matches({ live: { pool: 'backingOff' } });
      const probing = context.probing && context.provisioning.length >= 1;
      const refilling = snapshot.matches({ live: { pool: 'refilling' } });
      expect({ where, under: !(backingOff || probing || refilling) }).toEqual({ where, under: false });
    }
    for (const id of context.idle) expect({ where, id, state: runner(id)?.getSnapshot().value }).toEqual({ where, id, state: 'idle' });
    for (const id of context.provisioning) expect({ where, id, state: ['registering', 'starting', 'init'].includes(String(runner(id)?.getSnapshot().value)) }).toEqual({ where, id, state: true });
    for (const id of context.used) expect({ where, id, used: runner(id)?.getSnapshot().matches('used') }).toEqual({ where, id, used: true });
    expect(new Set([...context.idle, ...context.provisioning, ...context.used]).size).toBe(context.idle.length + context.provisioning.length + context.used.length);
  };

  await advance(1);
  for (const [i, step] of script.entries()) {
    const context = actor.getSnapshot().context;
    switch (step.kind) {
      case 'claim': {
        const claimId = ++claimIds;
        actor.send({ type: 'CLAIM', claimId, timeoutMs: step.timeoutS * 1000, at: clock.now() });
        const answer = actor.getSnapshot().context.claim;
        expect(answer?.claimId).toBe(claimId);
        if (answer?.runnerId !== undefined) {
          expect({ twice: claimed.has(answer.runnerId) }).toEqual({ twice: false });
          claimed.add(answer.runnerId);
        }
        break;
      }
      case 'release': {
        const id = pick(context.used, step.pick);
        if (id) runner(id)?.send({ type: 'DESTROY', reason: 'released' });
        break;
      }
      case 'lose': {
        const id = pick(step.used ? context.used : context.idle, step.pick);
        const allocation = id && nomad.allocations.get(id);
        if (id && allocation) nomad.update(id, { ...allocation, status: 'ended', reason: 'the allocation was lost' });
        break;
      }
      case 'restart': {
        const id = pick([...context.idle, ...context.used], step.pick);
        const allocation = id && nomad.allocations.get(id);
        if (id && allocation && allocation.status === 'running') {
          nomad.update(id, { ...allocation, status: 'pending' });
          clock.setTimeout(() => {
            const current = nomad.allocations.get(id);
            if (current?.allocId === allocation.allocId && current.status === 'pending') nomad.update(id, { ...current, status: 'running' });
          }, 200);
        }
        break;
      }
      case 'crash': {
        const id = pick([...context.idle, ...context.used], step.pick);
        if (id) {
          nomad.crashing.add(id);
          runner(id)?.send({ type: 'DESTROY', reason: 'released' });
          expect(runner(id)).toBeUndefined();
        }
        break;
      }
      case 'failPlacements':
        nomad.placementFailures += step.times;
        break;
      case 'failAllocations':
        nomad.allocationFailures += step.times;
        break;
      case 'failWrites':
        nomad.writeFailures += step.times;
        break;
      case 'poolSize':
      case 'template': {
        if (step.kind === 'poolSize') size = step.size;
        else driver = driver === 'a' ? 'b' : 'a';
        actor.send({ type: 'UPDATE', requestId: ++updates, spec: spec(), templateKey: runnerTemplateKey(spec()), pull: updates % 2 === 0 });
        break;
      }
      case 'advance':
        await advance(step.ms);
        break;
    }
    await flush();
    check(`step ${i} (${step.kind})`);
  }

  // Failures stop; time passes: the pool is full, and what is gone is gone from the cluster too.
  nomad.placementFailures = 0;
  nomad.allocationFailures = 0;
  nomad.writeFailures = 0;
  await advance(120_000);
  check('the end');
  const { context } = actor.getSnapshot();
  expect(context.idle).toHaveLength(context.spec.prewarmingPoolSize);
  expect(context.provisioning).toHaveLength(0);
  // Used runners all had a timeout or were released, except those claimed with none (0).
  const live = new Set(context.runners);
  expect([...nomad.jobs].filter((job) => !live.has(job))).toEqual([]);
  actor.stop();
  runners.stopAll();
}

describe('runner pool under churn (property, VirtualClock)', () => {
  it('never hands a runner to two claims, never over- or under-provisions, ends full', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(steps, { minLength: 5, maxLength: 60 }), (script) => runScenario(script)),
      { numRuns: 150 },
    );
  });

  it('replaces a runner whose actor fails, and purges its job', async () => {
    await runScenario([
      { kind: 'advance', ms: 2_000 },
      { kind: 'claim', timeoutS: 0 },
      { kind: 'failWrites', times: 2 },
      { kind: 'crash', pick: 0 },
      { kind: 'crash', pick: 1 },
      { kind: 'advance', ms: 2_000 },
    ]);
  });

  it('a long churn of claims and releases with failures in between', async () => {
    const script: Step[] = [];
    for (let i = 0; i < 200; i++) {
      script.push({ kind: 'claim', timeoutS: i % 3 }, { kind: 'advance', ms: 150 });
      if (i % 7 === 0) script.push({ kind: 'release', pick: i });
      if (i % 23 === 0) script.push({ kind: 'failPlacements', times: 2 });
      if (i % 31 === 0) script.push({ kind: 'lose', pick: i, used: false });
    }
    await runScenario(script);
  });
});
