/**
 * What the Poseidon-compatible API (src/api) needs of the pools beyond what they had: Poseidon's
 * `fetch` (environments another writer put on the cluster adopted), each runner's startup as it
 * happens (a histogram), why an execution's runner stopped under it (the API's words depend on it),
 * an execution interrupted as Poseidon stops one whose client went away, and an unprivileged user
 * that can work in the runner's directory.
 */
import { RunnerStoppedError } from '../../src/runners/errors.js';
import { checkEnvironmentSpec, templateJob } from '../../src/runners/poseidonFormat.js';
import type { RunnerStartup } from '../../src/runners/pools.js';
import { collect, startPoolHarness, type PoolHarness } from './support/poolHarness.js';
import { asRoot } from '../testing/helpers.js';

describe('pool features the API stands on', () => {
  let h: PoolHarness;
  beforeEach(async () => {
    h = await startPoolHarness();
  });
  afterEach(() => h.close());

  async function environment(id: number, size: number): Promise<void> {
    await h.settled(h.pools.putEnvironment({ id, prewarmingPoolSize: size, driver: 'raw_exec' }));
    await h.driveUntil(() => h.pools.environment(id)?.idleRunners === size);
  }

  it('fetchEnvironments adopts a template job written by someone else, and fills its pool', async () => {
    await environment(1, 1);
    h.fake.cluster.registerJob(templateJob(checkEnvironmentSpec({ id: 2, prewarmingPoolSize: 2, driver: 'raw_exec', cpuLimit: 80 })));
    await h.drive(1_000);
    expect(h.pools.environment(2)).toBeUndefined();
    expect(await h.settled(h.pools.fetchEnvironments())).toEqual({ adopted: [2], refreshed: [], removed: [] });
    expect(h.pools.environment(2)?.spec).toMatchObject({ id: 2, prewarmingPoolSize: 2, cpuLimit: 80, driver: 'raw_exec' });
    await h.driveUntil(() => h.pools.environment(2)?.idleRunners === 2);
    // Known ones are left as they are; nothing new: nothing adopted.
    expect(await h.settled(h.pools.fetchEnvironments())).toEqual({ adopted: [], refreshed: [], removed: [] });
    expect(h.pools.environments().map((e) => e.id)).toEqual([1, 2]);
  });

  it('startups$ tells each runner that became idle once, with its startup duration', async () => {
    const startups: RunnerStartup[] = [];
    h.pools.startups$.subscribe((startup) => startups.push(startup));
    await environment(3, 2);
    expect(startups).toHaveLength(2);
    for (const startup of startups) expect(startup).toEqual({ environmentId: 3, startupMs: expect.any(Number) });
    // Acting FakeNomad: received 100 ms after placement, started 400 ms later.
    expect(startups.every((s) => s.startupMs >= 400)).toBe(true);
    h.pools.claim(3);
    await h.driveUntil(() => h.pools.environment(3)?.idleRunners === 2);
    expect(startups).toHaveLength(3);
  });

  it("an execution whose runner is destroyed fails with a RunnerStoppedError naming why", async () => {
    await environment(4, 1);
    const runner = h.pools.claim(4, { inactivityTimeoutS: 60 });
    const execution = runner.execute({ command: 'sleep 30', privileged: true });
    await h.drive(200);
    void runner.destroy('the client wants to stop the runner');
    const outcome = await h.settled(execution.outcome);
    expect(outcome.status).toBe('failed');
    const error = outcome.status === 'failed' ? outcome.error : undefined;
    expect(error).toBeInstanceOf(RunnerStoppedError);
    expect(error).toMatchObject({ kind: 'destroyed', runnerId: runner.id, message: `runner ${runner.id}: the client wants to stop the runner` });
  });

  it('interrupt() ends an execution at once without a tty, after SIGQUIT with one; the runner stays', async () => {
    await environment(5, 1);
    const runner = h.pools.claim(5, { inactivityTimeoutS: 600 });
    const piped = runner.execute({ command: 'sleep 30', privileged: true });
    await h.drive(200);
    piped.interrupt('the client went away');
    expect(await piped.outcome).toMatchObject({ status: 'failed', error: { message: 'the client went away' } });
    await h.driveUntil(() => runner.info()?.executions.length === 0);
    // Under a tty the command gets Ctrl-\ (SIGQUIT): a shell that traps it says so and stops by itself.
    // stdin open, as an API client's is: the signal is typed into the terminal.
    const tty = runner.execute({ command: "trap 'echo quit; exit 3' QUIT; echo ready; while :; do sleep 0.05; done", privileged: true, tty: true, stdin: 'pipe' });
    let text = '';
    tty.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
    const ended = new Promise((resolve) => tty.stdout.once('end', resolve));
    await h.driveUntil(() => text.includes('ready'));
    tty.interrupt();
    expect((await tty.outcome).status).toBe('failed');
    // Real time for the real process to take the signal; the grace period (virtual) has not begun to run.
    await ended;
    expect(text).toMatch(/quit/);
    await h.drive(4_000);
    expect(runner.state).toBe('used');
  });

  asRoot('an unprivileged execution can work in the runner directory; files written by the pool stay protected', async () => {
    await environment(6, 1);
    const runner = h.pools.claim(6, { inactivityTimeoutS: 600 });
    await h.settled(runner.updateFiles({ copy: [{ path: 'protected/', content: '' }, { path: 'protected/main.py', content: 'print(1)\n' }] }));
    const run = runner.execute({ command: 'id -u; echo made > mine.txt && cat mine.txt; touch protected/ok && echo created; rm -f protected/main.py || echo refused' });
    const [stdout, stderr, outcome] = await h.settled(Promise.all([collect(run.stdout), collect(run.stderr), run.outcome]));
    expect(outcome).toEqual({ status: 'exited', exitCode: 0 });
    const lines = stdout.trim().split('\n');
    expect(lines.slice(1)).toEqual(['made', 'created', 'refused']);
    expect(lines[0]).toBe('65534');
    expect(stderr).toMatch(/Operation not permitted/);
  });
});
