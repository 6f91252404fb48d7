/**
 * The runner pools in the inspector: the model follows each environment's counts and runners (the
 * execution running in each), never its driver config; the environment is a child of the supervisor
 * actor, each runner an actor of its own, all of them visible to inspection.
 */
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { InspectionModel } from '../../src/inspect/model.js';
import type { InspectorMessage } from '../../src/inspect/schema.js';
import { startPoolHarness, type PoolHarness } from './support/poolHarness.js';

describe('runner pools in the inspector', () => {
  let h: PoolHarness;
  /** Each inspected actor's states, in order. */
  const inspected = new Map<string, string[]>();
  const inspect = (event: InspectionEvent): void => {
    if (event.type !== '@xstate.snapshot') return;
    const { id } = event.actorRef as AnyActorRef;
    const value = (event.snapshot as { value?: unknown }).value;
    const states = inspected.get(id) ?? [];
    const state = typeof value === 'string' ? value : JSON.stringify(value);
    if (states.at(-1) !== state) inspected.set(id, [...states, state]);
  };
  beforeEach(async () => {
    inspected.clear();
    h = await startPoolHarness({ inspect });
  });
  afterEach(() => h.close());

  it('shows pools with idle/used counts, runners with their state and the execution running in each', async () => {
    const model = new InspectionModel({ clock: h.clock, secrets: ['s3cret'] });
    const deltas: InspectorMessage[] = [];
    model.subscribe((_key, message) => deltas.push(message));
    const detach = model.attachPools(h.pools);
    await h.settled(h.pools.putEnvironment({ id: 60, prewarmingPoolSize: 2, driver: 'raw_exec', driverConfig: { auth: 's3cret' } }));
    await h.driveUntil(() => h.pools.environment(60)?.idleRunners === 2);
    const runner = h.pools.claim(60, { inactivityTimeoutS: 90 });
    const execution = runner.execute({ command: 'sleep 5', privileged: true });
    const pool = (model.snapshot().pools ?? []).find((p) => p.id === 60)!;
    expect(pool).toMatchObject({ state: 'active', driver: 'raw_exec', poolSize: 2, idle: 1, used: 1 });
    expect(pool.runners.find((r) => r.id === runner.id)).toMatchObject({ state: 'used', inactivityTimeoutS: 90, executions: [{ kind: 'execute', startedAt: new Date(h.clock.now()).toISOString() }] });
    expect(deltas.some((d) => d.type === 'pool')).toBe(true);
    expect(model.serialize(model.snapshot())).not.toContain('s3cret');
    expect(JSON.stringify(model.snapshot())).not.toContain('auth');
    execution.cancel();
    await execution.outcome;
    // The environment is a child of the supervisor's actor; its runners are actors of their own, each inspected.
    expect(h.supervisor.actor.getSnapshot().children['environment:60']).toBeDefined();
    expect(inspected.get(`runner:${runner.id}`)?.slice(0, 4)).toEqual(['registering', 'starting', 'idle', expect.stringContaining('"used"')]);
    await h.settled(h.pools.deleteEnvironment(60));
    expect((model.snapshot().pools ?? []).find((p) => p.id === 60)).toBeUndefined();
    detach();
  });
});
