/**
 * Environments and runners through their lives over a FakeNomad acting as a cluster: updates and
 * deletes as actor events, placement and allocation failures with back-off, lost allocations
 * replaced, executions that hit their time limit or the runner's inactivity timeout, port mappings.
 */
import { PlacementFailedError } from '../../src/runners/errors.js';
import { collect, startPoolHarness, type PoolHarness } from './support/poolHarness.js';

describe('environment and runner lifecycles', () => {
  let h: PoolHarness;
  beforeEach(async () => {
    h = await startPoolHarness({ pools: { backoff: { initialMs: 1_000, maxMs: 8_000 } } });
  });
  afterEach(() => h.close());

  async function environment(id: number, size: number, extra: Record<string, unknown> = {}): Promise<void> {
    await h.settled(h.pools.putEnvironment({ id, prewarmingPoolSize: size, driver: 'raw_exec', ...extra }));
    await h.driveUntil(() => h.pools.environment(id)?.idleRunners === size);
  }

  it('an update of the template replaces idle runners and leaves used ones alone; with force pulls off, pool size alone replaces nothing', async () => {
    await h.close();
    h = await startPoolHarness({ pools: { disableForcePull: true } });
    await environment(50, 2);
    const used = h.pools.claim(50, { inactivityTimeoutS: 300 });
    await h.driveUntil(() => h.pools.environment(50)?.idleRunners === 2);
    const idleBefore = h.pools.environment(50)!.runners.filter((r) => r.state === 'idle').map((r) => r.id);
    expect(await h.settled(h.pools.putEnvironment({ id: 50, prewarmingPoolSize: 3, driver: 'raw_exec' }))).toEqual({ created: false });
    await h.driveUntil(() => h.pools.environment(50)?.idleRunners === 3);
    expect(h.pools.environment(50)!.runners.filter((r) => r.state === 'idle').map((r) => r.id)).toEqual(expect.arrayContaining(idleBefore));
    await h.settled(h.pools.putEnvironment({ id: 50, prewarmingPoolSize: 3, driver: 'raw_exec', memoryLimit: 256 }));
    await h.driveUntil(() => h.pools.environment(50)?.idleRunners === 3);
    const after = h.pools.environment(50)!;
    expect(after.runners.filter((r) => r.state === 'idle').some((r) => idleBefore.includes(r.id))).toBe(false);
    for (const runner of after.runners.filter((r) => r.state === 'idle')) {
      expect(h.fake.cluster.job(runner.id)?.TaskGroups?.[0]?.Tasks[0]?.Resources?.MemoryMaxMB).toBe(256);
    }
    expect(used.state).toBe('used');
    expect(h.fake.cluster.job(used.id)?.TaskGroups?.[0]?.Tasks[0]?.Resources?.MemoryMaxMB).toBe(0);
  });

  it('deleting an environment deregisters every runner (used ones too) and its template', async () => {
    await environment(51, 2);
    const used = h.pools.claim(51);
    expect(await h.settled(h.pools.deleteEnvironment(51))).toBe(true);
    expect(h.pools.environment(51)).toBeUndefined();
    expect(h.fake.cluster.listJobs({ prefix: '51-' })).toEqual([]);
    expect(h.fake.cluster.job('template-51')).toBeUndefined();
    expect(used.state).toBe('destroyed');
    expect(await h.settled(h.pools.deleteEnvironment(51))).toBe(false);
  });

  it('placement failures: the runner job is purged, replenishment backs off, then fills the pool', async () => {
    await environment(52, 1);
    h.fake.acting!.failPlacements({ jobId: /^52-/, times: 3, dimension: 'memory' });
    const pooled = new Set(h.pools.environment(52)!.runners.map((r) => r.id));
    // Registrations of new runners (the claimed one's used mark is a registration too).
    const registrations = (): number => new Set(h.fake.cluster.listEvaluations().filter((e) => e.TriggeredBy === 'job-register' && e.JobID?.startsWith('52-') && !pooled.has(e.JobID)).map((e) => e.JobID)).size;
    h.pools.claim(52);
    await h.drive(500);
    const info = h.pools.environment(52)!;
    expect(info.backingOff).toBe(true);
    expect(info.lastError).toMatch(/failed to place all allocations:\nTask Group "default-group" \(failed to place 1 allocation\):\n.*\* Dimension "memory" exhausted on 1 nodes/s);
    // One registration, then one after each back-off (1 s, 2 s, 4 s), not one per tick.
    expect(registrations()).toBe(1);
    await h.drive(1_000);
    expect(registrations()).toBe(2);
    await h.drive(2_000);
    expect(registrations()).toBe(3);
    await h.drive(3_500);
    expect(registrations()).toBe(3);
    await h.drive(500);
    expect(registrations()).toBe(4);
    await h.driveUntil(() => h.pools.environment(52)?.idleRunners === 1, 30_000);
    expect(h.pools.environment(52)).toMatchObject({ backingOff: false, failures: 0 });
    // No job of a failed runner is left behind to be placed later.
    expect(h.fake.cluster.listJobs({ prefix: '52-' }).filter((j) => j.Status !== 'dead')).toHaveLength(2);
  });

  it("a new environment whose template cannot be placed fails in the CLI's words and leaves nothing behind", async () => {
    h.fake.acting!.failPlacements({ jobId: 'template-53' });
    await expect(h.settled(h.pools.putEnvironment({ id: 53, prewarmingPoolSize: 1, driver: 'raw_exec' }))).rejects.toThrow(
      /failed to place all allocations:\nTask Group "default-group" \(failed to place 1 allocation\):/,
    );
    expect(h.pools.environment(53)).toBeUndefined();
    expect(h.fake.cluster.job('template-53')).toBeUndefined();
    expect(PlacementFailedError).toBeDefined();
  });

  it('a lost or failed idle runner is replaced; a used runner whose allocation is lost is destroyed, its execution told why', async () => {
    await environment(54, 2);
    const [first] = h.pools.environment(54)!.runners;
    h.fake.acting!.lose(first!.allocationId!);
    await h.drive(100);
    expect(h.pools.runner(first!.id)?.state ?? 'destroyed').not.toBe('idle');
    await h.driveUntil(() => h.pools.environment(54)?.idleRunners === 2 && !h.pools.environment(54)!.runners.some((r) => r.id === first!.id));
    // A replacement whose task exits each time it starts: restarted 3 times, 15 s apart (the runner
    // template's restart policy), then failed; counted as a failure, replaced after the back-off.
    h.fake.acting!.failAllocations({ jobId: /^54-/ });
    const [second] = h.pools.environment(54)!.runners;
    await h.settled(h.pools.requireRunner(second!.id).destroy().catch(() => undefined));
    await h.driveUntil(() => h.pools.environment(54)?.lastError != null, 90_000, 500);
    expect(h.pools.environment(54)?.lastError).toMatch(/the allocation failed: default-task: Not Restarting|Exceeded allowed attempts 3 in interval 1h0m0s/);
    await h.driveUntil(() => h.pools.environment(54)?.idleRunners === 2, 20_000);
    const used = h.pools.claim(54, { inactivityTimeoutS: 100 });
    const execution = used.execute({ command: 'sleep 30', privileged: true });
    await h.drive(500);
    h.fake.acting!.lose(used.info()!.allocationId!);
    const outcome = await h.settled(execution.outcome);
    expect(outcome.status).toBe('failed');
    expect(outcome.status === 'failed' && outcome.error.message).toMatch(/the allocation was lost: alloc is lost since its node is down/);
    await h.driveUntil(() => used.state === 'destroyed');
    expect(h.fake.cluster.job(used.id)).toBeUndefined();
  });

  it('a time limit ends a command with a timeout; without one the exit code comes back', async () => {
    await environment(55, 1);
    const runner = h.pools.claim(55, { inactivityTimeoutS: 600 });
    const slow = runner.execute({ command: 'sleep 30; echo never', timeLimitS: 2, privileged: true });
    const stdout = collect(slow.stdout);
    await h.drive(1_900);
    expect(runner.info()?.executions.map((e) => e.kind)).toEqual(['execute']);
    await h.drive(200);
    expect(await slow.outcome).toEqual({ status: 'timeout', reason: 'time-limit' });
    expect(await stdout).toBe('');
    await h.driveUntil(() => runner.info()?.executions.length === 0);
    const quick = runner.execute({ command: 'exit 7', timeLimitS: 2 , privileged: true });
    expect(await quick.outcome).toEqual({ status: 'exited', exitCode: 7 });
    expect(runner.state).toBe('used');
  });

  it('with a tty a command past its time limit gets SIGQUIT; one that ignores it takes the runner with it', async () => {
    await environment(56, 1);
    const runner = h.pools.claim(56, { inactivityTimeoutS: 600 });
    const stubborn = runner.execute({ command: "trap '' QUIT; sleep 60", timeLimitS: 1, tty: true, privileged: true });
    await h.drive(1_100);
    expect(await stubborn.outcome).toEqual({ status: 'timeout', reason: 'time-limit' });
    expect(runner.state).toBe('used');
    await h.driveUntil(() => runner.state === 'destroyed', 10_000);
    expect(runner.info()).toBeUndefined();
  });

  it("the runner's inactivity timeout ends a running execution with a timeout (Poseidon's e2e behaviour)", async () => {
    await environment(57, 1);
    const runner = h.pools.claim(57, { inactivityTimeoutS: 2 });
    const forever = runner.execute({ command: 'sleep 60', privileged: true });
    await h.drive(2_100);
    expect(await forever.outcome).toEqual({ status: 'timeout', reason: 'inactivity' });
    await h.driveUntil(() => runner.state === 'destroyed');
  });

  it('exposed ports are mapped from the allocation (exposedPort → host:port)', async () => {
    await environment(58, 1, { networkAccess: true, exposedPorts: [8080] });
    const job = h.fake.cluster.job(h.pools.environment(58)!.runners[0]!.id);
    expect(job?.TaskGroups?.[0]?.Networks?.[0]).toMatchObject({ Mode: 'host', DynamicPorts: [expect.objectContaining({ Label: '8080', To: 8080 })] });
    const runner = h.pools.claim(58);
    expect(runner.mappedPorts).toEqual([{ exposedPort: 8080, hostAddress: expect.stringMatching(/^127\.0\.0\.1:2\d{4}$/) }]);
    const { AllocatedResources } = h.fake.cluster.allocation(runner.info()!.allocationId!)!;
    expect(runner.mappedPorts[0]?.hostAddress).toBe(`127.0.0.1:${AllocatedResources?.Shared?.Ports?.[0]?.Value}`);
  });
});
