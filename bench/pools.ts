/**
 * Runner pools, `npx tsx bench/pools.ts`: prints one JSON object.
 * - claim: latency of RunnerPools.claim() from a warm pool (p50/p99, µs) beside a bare Map taken
 *   from in the same loop; ratio = claim ÷ Map.
 * - claimable: time from a runner's allocation update `running` being published by the (in-process)
 *   FakeNomad to the runner being idle in its pool, beside a bare event-stream reader of the same
 *   stream receiving that update; ratio = pool ÷ bare reader (p50/p99, ms).
 * - churn: claims at a target rate (default 1,000/s, each runner destroyed as soon as it is claimed)
 *   against a FakeNomad in its own process, with the pool size held: the rate reached, claims that
 *   found the pool empty, idle runners seen at each tick, heap growth; beside a bare client making
 *   the same Nomad writes per claim (mark used, a new runner job, a purge) at the same rate against
 *   a fresh server; ratio = claims/s reached ÷ bare writes/s reached.
 *
 *   npx tsx bench/pools.ts [--rate 1000] [--seconds 10] [--pool 200]
 */
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import { systemClock } from '../src/clock/index.js';
import { NomadClient } from '../src/nomad/client.js';
import { NoIdleRunnerError } from '../src/runners/errors.js';
import { createRunnerPools, type RunnerPools } from '../src/runners/pools.js';
import { runnerJob, checkEnvironmentSpec, withConfigMeta } from '../src/runners/poseidonFormat.js';
import type { Runner } from '../src/runners/runner.js';
import { createSupervisor } from '../src/supervisor/index.js';
import type { Supervisor } from '../src/supervisor/supervisor.js';
import { FakeNomad } from '../src/testing/fakeNomad.js';
import { numberOption, percentile, round } from './support/figures.js';
import { withFakeNomadProcess } from './support/fakeNomadProcess.js';
import { heapUsed } from './support/heap.js';

const RATE = numberOption('rate', 1_000);
const SECONDS = numberOption('seconds', 10);
const POOL = numberOption('pool', 200);
const CLAIM_POOL = 400;
const CLAIM_ROUNDS = 3;

const wall = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));


async function until(done: () => boolean, timeoutMs = 120_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > end) throw new Error('timed out');
    await sleep(5);
  }
}

async function poolsOver(address: string): Promise<{ supervisor: Supervisor; pools: RunnerPools; nomad: NomadClient }> {
  const nomad = new NomadClient({ address }, { gzip: false });
  const supervisor = createSupervisor({ nomad });
  const pools = createRunnerPools(supervisor);
  await pools.ready;
  return { supervisor, pools, nomad };
}

async function claimLatency(pools: RunnerPools): Promise<Record<string, number>> {
  await pools.putEnvironment({ id: 1, prewarmingPoolSize: CLAIM_POOL, driver: 'raw_exec' });
  const claims: number[] = [];
  const lookups: number[] = [];
  for (let r = 0; r < CLAIM_ROUNDS; r++) {
    await until(() => pools.environment(1)?.idleRunners === CLAIM_POOL);
    const bare = new Map(pools.environment(1)!.runners.map((runner) => [runner.id, runner]));
    const taken: Runner[] = [];
    for (let i = 0; i < CLAIM_POOL - 10; i++) {
      // Alternate which goes first, so neither always runs on a warmer cache.
      const viaMap = (): void => {
        const start = process.hrtime.bigint();
        const id = bare.keys().next().value as string;
        const runner = bare.get(id);
        bare.delete(id);
        lookups.push(Number(process.hrtime.bigint() - start) / 1e3);
        if (runner === undefined) throw new Error('empty map');
      };
      const viaPool = (): void => {
        const start = process.hrtime.bigint();
        const runner = pools.claim(1, { inactivityTimeoutS: 60 });
        claims.push(Number(process.hrtime.bigint() - start) / 1e3);
        taken.push(runner);
      };
      if (i % 2 === 0) {
        viaMap();
        viaPool();
      } else {
        viaPool();
        viaMap();
      }
    }
    await Promise.all(taken.map((runner) => runner.destroy()));
  }
  await pools.deleteEnvironment(1);
  return {
    claims: claims.length,
    claim_p50_us: round(percentile(claims, 0.5)),
    claim_p99_us: round(percentile(claims, 0.99)),
    map_p50_us: round(percentile(lookups, 0.5), 3),
    map_p99_us: round(percentile(lookups, 0.99), 3),
    ratio_p50: round(percentile(claims, 0.5) / percentile(lookups, 0.5), 1),
    ratio_p99: round(percentile(claims, 0.99) / percentile(lookups, 0.99), 1),
  };
}

/**
 * Each runner's `running` update: when the fake published it, when a bare reader got it, when its
 * pool had it idle. The bare reader subscribes first, to the supervisor's topics, so that the fake
 * serves it no later than the supervisor.
 */
async function runningToClaimable(count: number): Promise<Record<string, number>> {
  const fake = await FakeNomad.start({ clock: systemClock, exec: false, eventBufferSize: 1_000, acting: { scheduleDelayMs: 1, receiveDelayMs: 1, startDelayMs: 1, stopDelayMs: 1, gcAfterMs: 1_000 } });
  const published = new Map<string, number>();
  const read = new Map<string, number>();
  const idle = new Map<string, number>();
  const unlisten = fake.broker.listen((batch) => {
    for (const event of batch.Events) {
      const alloc = event.Payload.Allocation as { JobID?: string; ClientStatus?: string } | undefined;
      if (event.Topic === 'Allocation' && alloc?.ClientStatus === 'running' && alloc.JobID?.startsWith('2-') && !published.has(alloc.JobID)) published.set(alloc.JobID, wall());
    }
  });
  const reader = await request(`${fake.address}/v1/event/stream?topic=Job&topic=Evaluation&topic=Allocation&topic=Deployment&index=${fake.cluster.index + 1}`);
  const { supervisor, pools, nomad } = await poolsOver(fake.address);
  let buffered = '';
  reader.body.on('data', (chunk: Buffer) => {
    const now = wall();
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      const frame = JSON.parse(line) as { Events?: { Topic: string; Payload: { Allocation?: { JobID?: string; ClientStatus?: string } } }[] };
      for (const event of frame.Events ?? []) {
        const alloc = event.Payload.Allocation;
        if (event.Topic === 'Allocation' && alloc?.ClientStatus === 'running' && alloc.JobID?.startsWith('2-') && !read.has(alloc.JobID)) read.set(alloc.JobID, now);
      }
    }
  });
  const subscription = pools.changes$.subscribe(() => {
    const now = wall();
    for (const runner of pools.environment(2)?.runners ?? []) if (runner.state === 'idle' && !idle.has(runner.id)) idle.set(runner.id, now);
  });
  await pools.putEnvironment({ id: 2, prewarmingPoolSize: count, driver: 'raw_exec' });
  await until(() => pools.environment(2)?.idleRunners === count);
  await sleep(50);
  subscription.unsubscribe();
  unlisten();
  reader.body.destroy();
  await pools.deleteEnvironment(2);
  await supervisor.stop();
  await nomad.close();
  await fake.close();
  const ids = [...idle.keys()].filter((id) => published.has(id) && read.has(id));
  const pool = ids.map((id) => idle.get(id)! - published.get(id)!);
  const bare = ids.map((id) => read.get(id)! - published.get(id)!);
  return {
    runners: ids.length,
    pool_p50_ms: round(percentile(pool, 0.5), 3),
    pool_p99_ms: round(percentile(pool, 0.99), 3),
    bare_reader_p50_ms: round(percentile(bare, 0.5), 3),
    bare_reader_p99_ms: round(percentile(bare, 0.99), 3),
    ratio_p50: round(percentile(pool, 0.5) / Math.max(percentile(bare, 0.5), 1e-3), 2),
    ratio_p99: round(percentile(pool, 0.99) / Math.max(percentile(bare, 0.99), 1e-3), 2),
  };
}

/** Claims at RATE for SECONDS, each claimed runner destroyed at once. */
async function churn(address: string): Promise<Record<string, number>> {
  const { supervisor, pools, nomad } = await poolsOver(address);
  await pools.putEnvironment({ id: 3, prewarmingPoolSize: POOL, driver: 'raw_exec' });
  await until(() => pools.environment(3)?.idleRunners === POOL);
  let claimed = 0;
  let empty = 0;
  const idleSeen: number[] = [];
  let heapAtWarm = 0;
  const start = wall();
  const tickMs = 10;
  for (let tick = 0; wall() - start < SECONDS * 1000; tick++) {
    const due = Math.floor(((wall() - start) / 1000) * RATE);
    while (claimed + empty < due) {
      try {
        void pools.claim(3, { inactivityTimeoutS: 60 }).destroy();
        claimed += 1;
      } catch (error) {
        if (!(error instanceof NoIdleRunnerError)) throw error;
        empty += 1;
      }
    }
    idleSeen.push(pools.environment(3)?.idleRunners ?? 0);
    if (heapAtWarm === 0 && wall() - start > 2_000) heapAtWarm = heapUsed();
    await sleep(tickMs);
  }
  const elapsed = (wall() - start) / 1000;
  await until(() => pools.environment(3)?.idleRunners === POOL && pools.environment(3)?.usedRunners === 0);
  const heapAtEnd = heapUsed();
  await pools.deleteEnvironment(3);
  await supervisor.stop();
  await nomad.close();
  return {
    target_per_s: RATE,
    claims_per_s: round(claimed / elapsed, 1),
    empty_pool_claims: empty,
    pool_size: POOL,
    idle_min: Math.min(...idleSeen),
    idle_median: percentile(idleSeen, 0.5),
    heap_warm_mb: round(heapAtWarm / 2 ** 20),
    heap_end_mb: round(heapAtEnd / 2 ** 20),
    heap_growth_kb_per_1000_claims: round(((heapAtEnd - heapAtWarm) / 1024) / Math.max(1, claimed / 1000), 1),
  };
}

/** The same Nomad writes per claim, made by a bare client at the same rate: what the fake and HTTP allow. */
async function bareWrites(address: string): Promise<Record<string, number>> {
  const nomad = new NomadClient({ address }, { gzip: false });
  const spec = checkEnvironmentSpec({ id: 4, prewarmingPoolSize: 0, driver: 'raw_exec' });
  let done = 0;
  let sent = 0;
  const inFlight = new Set<Promise<void>>();
  const start = wall();
  const cycle = async (n: number): Promise<void> => {
    const id = `4-00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
    const job = runnerJob(spec, id);
    const created = await nomad.registerJob(job, { enforceIndex: 0 });
    await nomad.registerJob(withConfigMeta(job, { used: 'true', timeout: '60' }), { enforceIndex: created.JobModifyIndex });
    await nomad.deregisterJob(id, { purge: true });
    done += 1;
  };
  while (wall() - start < SECONDS * 1000) {
    const due = Math.floor(((wall() - start) / 1000) * RATE);
    while (sent < due && inFlight.size < 2_000) {
      const work = cycle(sent++).finally(() => inFlight.delete(work));
      inFlight.add(work);
    }
    await sleep(10);
  }
  const elapsed = (wall() - start) / 1000;
  await Promise.allSettled([...inFlight]);
  await nomad.close();
  return { target_per_s: RATE, writes_cycles_per_s: round(done / elapsed, 1) };
}

async function main(): Promise<void> {
  const fake = await FakeNomad.start({ clock: systemClock, exec: false, eventBufferSize: 1_000, acting: { scheduleDelayMs: 1, receiveDelayMs: 1, startDelayMs: 1, stopDelayMs: 1, gcAfterMs: 1_000 } });
  const local = await poolsOver(fake.address);
  const claim = await claimLatency(local.pools);
  await local.supervisor.stop();
  await local.nomad.close();
  await fake.close();
  const claimable = await runningToClaimable(100);
  const pools = await withFakeNomadProcess(churn);
  const bare = await withFakeNomadProcess(bareWrites);
  console.log(JSON.stringify({
    claim,
    running_to_claimable: claimable,
    churn: { ...pools, bare_client: bare, ratio: round((pools.claims_per_s ?? 0) / (bare.writes_cycles_per_s ?? 1), 2) },
  }, null, 2));
}

await main();
