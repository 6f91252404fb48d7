/** The runner machine alone, on a VirtualClock, with its Nomad writes as controllable promises. */
import { createActor, createEmptyActor } from 'xstate';
import { VirtualClock, settle } from '../../src/clock/index.js';
import { runnerMachine } from '../../machines/runner.js';
import type { RunnerAllocation, RunnerInput, RunnerIo } from '../../machines/runnerTypes.js';
import { checkEnvironmentSpec } from '../../src/runners/poseidonFormat.js';

function deferred(): { promise: Promise<void>; resolve(): void; reject(error: Error): void } {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function setup(recovered?: RunnerInput['recovered']) {
  const clock = new VirtualClock({ start: 0 });
  const calls: string[] = [];
  const registration = deferred();
  let markFailures = 0;
  const io: RunnerIo = {
    registerRunner: () => (calls.push('register'), registration.promise),
    markUsed: async ({ timeoutMs }) => {
      calls.push(`mark ${timeoutMs}`);
      if (markFailures-- > 0) throw new Error('Unexpected response code: 500');
    },
    deregisterRunner: async () => void calls.push('purge'),
    endExecutions: (_id, reason) => void calls.push(`end ${reason.kind}`),
  };
  const spec = checkEnvironmentSpec({ id: 1, prewarmingPoolSize: 1, driver: 'raw_exec' });
  // Alone here: what it tells its environment goes nowhere.
  const environment = createEmptyActor();
  const actor = createActor(runnerMachine, { clock, input: { runnerId: '1-a', environmentId: 1, spec, io, templateKey: 'k', environment, ...(recovered ? { recovered } : {}) } }).start();
  const allocation = (status: RunnerAllocation['status'], modifyIndex: number): RunnerAllocation => ({ allocId: 'x', createIndex: 1, modifyIndex, status, ports: [], at: clock.now() });
  return { clock, calls, registration, actor, allocation, failMarks: (n: number) => (markFailures = n) };
}

describe('runner machine', () => {
  it('an allocation running before the registration is confirmed makes the runner idle at once', async () => {
    const { actor, allocation, clock } = setup();
    actor.send({ type: 'ALLOCATION.UPDATED', allocation: allocation('pending', 1) });
    clock.advance(300);
    actor.send({ type: 'ALLOCATION.UPDATED', allocation: allocation('running', 2) });
    expect(actor.getSnapshot().value).toBe('idle');
    expect(actor.getSnapshot().context.startupMs).toBe(300);
  });

  it('retired while registering: the job is purged once the registration is through, never before', async () => {
    const { actor, calls, registration } = setup();
    actor.send({ type: 'RETIRE', reason: 'deleted' });
    await settle();
    expect(calls).toEqual(['register']);
    registration.resolve();
    await settle(3);
    expect(calls).toEqual(['register', 'end retired', 'purge']);
    expect(actor.getSnapshot().status).toBe('done');
  });

  it('a claim is never lost: the used mark is written again after 0.5 s, 1 s … until Nomad takes it', async () => {
    const { actor, calls, registration, allocation, clock, failMarks } = setup();
    registration.resolve();
    await settle(3);
    actor.send({ type: 'ALLOCATION.UPDATED', allocation: allocation('running', 2) });
    failMarks(2);
    actor.send({ type: 'CLAIM', timeoutMs: 30_000, at: clock.now() });
    await settle(3);
    expect(calls.filter((c) => c.startsWith('mark'))).toHaveLength(1);
    clock.advance(500);
    await settle(3);
    expect(calls.filter((c) => c.startsWith('mark'))).toHaveLength(2);
    clock.advance(1_000);
    await settle(3);
    expect(calls.filter((c) => c.startsWith('mark'))).toEqual(['mark 30000', 'mark 30000', 'mark 30000']);
    expect(actor.getSnapshot().matches({ used: { marking: 'marked' } })).toBe(true);
  });

  it('recovered used: no mark written unless its timeout was unreadable, the timer runs from now', async () => {
    const running = { allocId: 'x', createIndex: 1, modifyIndex: 5, status: 'running' as const, ports: [], at: 0 };
    const kept = setup({ phase: 'used', allocation: running, timeoutMs: 2_000, markAgain: false });
    await settle(3);
    expect(kept.calls).toEqual([]);
    kept.clock.advance(2_000);
    await settle(3);
    expect(kept.calls).toEqual(['end inactivity', 'purge']);
    const again = setup({ phase: 'used', allocation: running, timeoutMs: 60_000, markAgain: true });
    await settle(3);
    expect(again.calls).toEqual(['mark 60000']);
  });
});
