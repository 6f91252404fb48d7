/**
 * `warden serve` (installed, in a process of its own, Warden's defaults) on the live agent when
 * something outside it acts: an operator stops a runner's allocation (Nomad replaces the allocation
 * and the runner goes on in it) or its job (the pool replaces the runner, nothing is left behind),
 * and serve itself is killed with SIGKILL and started again over used and idle runners (every
 * runner adopted as it was: used ones keep their files, their claims and their inactivity timeout;
 * idle ones fill the pool; no job leaked, none lost). Figures: the time to
 * a full pool after an external stop, and from a restart to the pool adopted.
 */
import { randomInt } from 'node:crypto';
import { NomadClient } from '../../src/nomad/client.js';
import { nomadConfigFromEnv } from '../../src/nomad/config.js';
import { recordFigure } from './support/figures.js';
import { liveAgents } from './support/live.js';
import { liveNamespace, output, PoseidonClient, startServeProcess, until, type ServeProcess } from './support/serveProcess.js';

const namespace = liveNamespace('warden-serve-life');
const ENVIRONMENT = randomInt(1_000, 9_000);
const POOL = 3;

let serve: ServeProcess;
let p: PoseidonClient;
let nomad: NomadClient;

/** The runner jobs of the environment Nomad runs (not dead), by ID. */
async function liveRunnerJobs(): Promise<string[]> {
  return (await nomad.listJobs(`${ENVIRONMENT}-`)).body.filter((job) => job.Status !== 'dead').map((job) => job.ID).sort();
}

/** The environment's runners as the API counts them equal the runner jobs Nomad runs: none leaked, none lost. */
async function accountedFor(used: number): Promise<void> {
  await until(`${POOL} idle and ${used} used runners, as many runner jobs in Nomad`, async () => {
    const statistics = await p.statistics(ENVIRONMENT);
    return statistics?.idleRunners === POOL && statistics.usedRunners === used && (await liveRunnerJobs()).length === POOL + used;
  }, 90_000, 200);
}

async function nomadCall(method: string, path: string): Promise<void> {
  const separator = path.includes('?') ? '&' : '?';
  const response = await fetch(`${liveAgents().nomad}${path}${separator}namespace=${namespace.name}`, { method });
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  await response.text();
}

async function runningAllocation(jobId: string): Promise<string> {
  const allocation = (await nomad.jobAllocations(jobId)).body.find((a) => a.ClientStatus === 'running');
  if (allocation === undefined) throw new Error(`${jobId} has no running allocation`);
  return allocation.ID;
}

async function idleRunnerJob(used: readonly string[]): Promise<string> {
  const idle = (await liveRunnerJobs()).find((id) => !used.includes(id));
  if (idle === undefined) throw new Error('no idle runner job');
  return idle;
}

beforeAll(async () => {
  await namespace.create();
  nomad = new NomadClient(nomadConfigFromEnv({ NOMAD_ADDR: liveAgents().nomad, NOMAD_NAMESPACE: namespace.name }));
  serve = await startServeProcess([], namespace.env);
  p = new PoseidonClient(serve.api);
  await p.environment(ENVIRONMENT, POOL);
}, 180_000);

afterAll(async () => {
  await p?.call('DELETE', `/execution-environments/${ENVIRONMENT}`).catch(() => undefined);
  await serve?.kill('SIGTERM');
  await nomad?.close();
  await namespace.remove();
}, 120_000);

describe('stopped from outside', () => {
  it("an idle runner's allocation stopped: Nomad replaces the allocation, the runner goes on in it, the pool stays full", async () => {
    await accountedFor(0);
    const victim = await idleRunnerJob([]);
    const stopped = await runningAllocation(victim);
    const began = performance.now();
    await nomadCall('POST', `/v1/allocation/${stopped}/stop`);
    // Nomad migrates a stopped allocation of a batch job: a replacement of the same job, which the
    // runner follows (starting, then idle again), as Poseidon re-adds a runner whose allocation is new.
    let replacement = '';
    await until('the replacement allocation running and the pool full', async () => {
      replacement = (await nomad.jobAllocations(victim)).body.find((a) => a.ID !== stopped && a.ClientStatus === 'running')?.ID ?? '';
      return replacement !== '' && (await p.statistics(ENVIRONMENT))?.idleRunners === POOL;
    }, 60_000, 100);
    recordFigure({ name: 'serve: full pool again after an external allocation stop (ms)', value: Math.round(performance.now() - began), where: 'serveLifecycle' });
    await accountedFor(0);
    // Claimed until the victim is handed out (a refill may come first): its executions run in the replacement.
    const claimed: string[] = [];
    while (!claimed.includes(victim) && claimed.length < 2 * POOL) claimed.push(await p.runner(ENVIRONMENT));
    expect(claimed).toContain(victim);
    const directory = (await p.run(victim, { command: 'pwd', privilegedExecution: true })).stdout;
    expect(directory).toContain(`/alloc/${replacement}/`);
    for (const id of claimed) expect((await p.call('DELETE', `/runners/${id}`)).status).toBe(204);
    await accountedFor(0);
  });

  it("an idle runner's job stopped: replaced the same way", async () => {
    const victim = await idleRunnerJob([]);
    const began = performance.now();
    await nomadCall('DELETE', `/v1/job/${victim}`);
    await until('the stopped runner replaced', async () => !(await liveRunnerJobs()).includes(victim) && (await p.statistics(ENVIRONMENT))?.idleRunners === POOL, 90_000, 100);
    recordFigure({ name: 'serve: full pool again after an external job stop (ms)', value: Math.round(performance.now() - began), where: 'serveLifecycle' });
    await accountedFor(0);
  });

  it("a used runner's allocation stopped under a running execution: the client is told, the runner is gone, the pool untouched", async () => {
    const id = await p.runner(ENVIRONMENT);
    await accountedFor(1);
    const conversation = await p.connect(await p.execute(id, { command: 'sleep 60' }));
    await conversation.next('start');
    await nomadCall('POST', `/v1/allocation/${await runningAllocation(id)}/stop`);
    expect(await conversation.closed).toBe(1000);
    expect(output(conversation.messages).control.at(-1)).toMatchObject({ type: 'error' });
    await until('the runner gone', async () => (await p.call('POST', `/runners/${id}/execute`, { command: 'true' })).status === 410);
    await accountedFor(0);
  });
});

describe('killed (SIGKILL) and started again', () => {
  const used: string[] = [];
  beforeAll(async () => {
    await accountedFor(0);
    used.push(await p.runner(ENVIRONMENT, 0), await p.runner(ENVIRONMENT, 0));
    expect((await p.copy(used[0]!, { 'kept.txt': 'written before the kill' })).status).toBe(204);
    await accountedFor(2);
    const before = await liveRunnerJobs();
    expect((await serve.kill('SIGKILL')).signal).toBe('SIGKILL');
    // Nothing manages the pool now: Nomad keeps running what it had.
    expect(await liveRunnerJobs()).toEqual(before);
    const began = performance.now();
    serve = await startServeProcess([], namespace.env);
    p = new PoseidonClient(serve.api);
    await accountedFor(2);
    recordFigure({ name: 'serve: restart to its pools adopted (ms)', value: Math.round(performance.now() - began), where: 'serveLifecycle' });
    // The same runners: nothing replaced, nothing added.
    expect(await liveRunnerJobs()).toEqual(before);
  }, 180_000);

  it('used runners are still claimed, with their files, and run executions', async () => {
    expect(await p.run(used[0]!, { command: 'cat kept.txt' })).toMatchObject({ stdout: 'written before the kill', close: 1000 });
    expect(await p.run(used[1]!, { command: 'exit 3' })).toMatchObject({ control: [{ type: 'start' }, { type: 'exit', data: 3 }] });
  });

  it('idle runners serve claims, and the pool refills', async () => {
    const id = await p.runner(ENVIRONMENT);
    expect(await p.run(id, { command: 'echo adopted' })).toMatchObject({ stdout: 'adopted\r\n' });
    expect((await p.call('DELETE', `/runners/${id}`)).status).toBe(204);
    await accountedFor(2);
  });

  it('a used runner deleted after the restart is purged from Nomad', async () => {
    expect((await p.call('DELETE', `/runners/${used[1]}`)).status).toBe(204);
    await expect(nomad.getJob(used[1]!)).rejects.toMatchObject({ status: 404 });
    await accountedFor(1);
  });

  it("an adopted runner's inactivity timeout, read back from its job, still destroys it", async () => {
    const id = await p.runner(ENVIRONMENT, 3);
    await accountedFor(2);
    await serve.kill('SIGKILL');
    serve = await startServeProcess([], namespace.env);
    p = new PoseidonClient(serve.api);
    // Watched by the counts only: a request to the runner would count as activity.
    await accountedFor(1);
    expect((await p.call('GET', `/runners/${id}/files`)).status).toBe(410);
  });
});
