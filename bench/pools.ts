/**
 * Runner pools, `npx tsx bench/pools.ts`: prints one JSON object.
 * - claim: latency of RunnerPools.claim() from a warm pool of 10 and of 1,000 runners (p50/p99, µs)
 *   beside a bare Map taken from in the same loop; ratio = claim ÷ Map. A claim should cost the
 *   same whatever the pool's size (ratio_1000_to_10).
 * - claimable: time from a runner's allocation update `running` being published by the (in-process)
 *   FakeNomad to the runner being idle in its pool, beside a bare event-stream reader of the same
 *   stream receiving that update; ratio = pool ÷ bare reader (p50/p99, ms).
 * - churn: claims at a target rate (default 1,000/s, each runner destroyed as soon as it is claimed)
 *   against a FakeNomad in its own process (as a real Nomad is), with the pool size held: the rate
 *   reached, claims that found the pool empty, idle runners seen; heap in use after full GCs
 *   sampled every second after a warm-up, and its slope per claim with its noise (±2 standard
 *   errors of a least-squares fit: a bound of zero inside it is a flat heap). Beside it, the floor:
 *   a bare client making the same Nomad traffic per claim (a runner job registered and its
 *   evaluation read, its used mark, its purge) at the same rate against a fresh server of the same
 *   kind, reading the same event stream (each frame decoded, nothing more); ratio = claims/s ÷ the
 *   bare client's cycles/s.
 *
 *   npx tsx bench/pools.ts [--rate 1000] [--seconds 20] [--warmup 8] [--pool 200]
 *
 * Measured (2 cores shared with other work): claim p50 / p99 84-94 / 366-466 µs at pools of 10 and
 * 1,000 alike (Map 0.4-0.75 / 3-4.6 µs); running → claimable 3.3 / 8.1 ms vs the bare reader's 1.7 /
 * 5.5 ms. Churn: offered 1,000/s, 513 claims/s vs the bare client's 606 cycles/s (0.85): this machine
 * cannot make a claim's Nomad traffic 1,000 times a second even without Warden (the fake alone needs
 * 1-1.7 ms CPU a cycle). At --rate 400 the pool holds (idle min 168 of 200), 2.4-2.6 ms Warden CPU a
 * claim. The heap's slope per claim (177 ± 70 B at 400/s) is the event stream's memory of each
 * allocation's newest version filling up to its bound (2 × 131,072 allocations): with that bound set
 * to 1,000 for the measurement, 59 ± 64 B, zero within the noise.
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
import { SUPERVISOR_TOPICS } from '../src/supervisor/nomadSource.js';
import type { Supervisor } from '../src/supervisor/supervisor.js';
import { FakeNomad } from '../src/testing/fakeNomad.js';
import { cpuMs, numberOption, percentile, round, slope } from './support/figures.js';
import { withFakeNomadProcess, type FakeNomadProcess } from './support/fakeNomadProcess.js';
import { heapUsed } from './support/heap.js';

const RATE = numberOption('rate', 1_000);
const SECONDS = numberOption('seconds', 20);
const WARMUP = numberOption('warmup', 8);
const POOL = numberOption('pool', 200);
const ACTING = { scheduleDelayMs: 1, receiveDelayMs: 1, startDelayMs: 1, stopDelayMs: 1, gcAfterMs: 1_000 };
const TICK_MS = 10;

const wall = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function until(done: () => boolean, timeoutMs = 120_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > end) throw new Error('timed out');
    await sleep(2);
  }
}

/**
 * The supervisor keeps the last `historySize` allocations' verdicts (or why they were not judged:
 * runner allocations are not), 10,000 by default, so its heap grows until that many runners have
 * been claimed; its job cache keeps 2,000 jobs. History kept at 1,000 here, and the churn's warm-up
 * (8 s) long enough for both to be full, so the heap's slope shows whether anything else grows.
 */
const HISTORY = 1_000;

async function poolsOver(address: string): Promise<{ supervisor: Supervisor; pools: RunnerPools; nomad: NomadClient }> {
  const nomad = new NomadClient({ address }, { gzip: false });
  const supervisor = createSupervisor({ nomad, historySize: HISTORY });
  const pools = createRunnerPools(supervisor);
  await pools.ready;
  return { supervisor, pools, nomad };
}

const idleIn = (pools: RunnerPools, id: number): number => pools.environmentSummary(id)?.idleRunners ?? 0;

/** `rounds` times: a full pool of `size`, `take` claims each beside a bare Map lookup, then every claimed runner destroyed. */
async function claimLatency(pools: RunnerPools, id: number, size: number, take: number, rounds: number): Promise<{ claims: number[]; lookups: number[] }> {
  await pools.putEnvironment({ id, prewarmingPoolSize: size, driver: 'raw_exec' });
  const claims: number[] = [];
  const lookups: number[] = [];
  for (let r = 0; r < rounds; r++) {
    await until(() => idleIn(pools, id) === size);
    const bare = new Map(pools.environment(id)!.runners.map((runner) => [runner.id, runner]));
    const taken: Runner[] = [];
    for (let i = 0; i < take; i++) {
      // Alternate which goes first, so neither always runs on a warmer cache.
      const viaMap = (): void => {
        const start = process.hrtime.bigint();
        const key = bare.keys().next().value as string;
        const runner = bare.get(key);
        bare.delete(key);
        lookups.push(Number(process.hrtime.bigint() - start) / 1e3);
        if (runner === undefined) throw new Error('empty map');
      };
      const viaPool = (): void => {
        const start = process.hrtime.bigint();
        const runner = pools.claim(id, { inactivityTimeoutS: 60 });
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
  await pools.deleteEnvironment(id);
  return { claims, lookups };
}

async function claimLatencies(pools: RunnerPools): Promise<Record<string, number>> {
  const small = await claimLatency(pools, 1, 10, 8, 150);
  const large = await claimLatency(pools, 2, 1_000, 800, 2);
  const figures = (name: string, { claims, lookups }: { claims: number[]; lookups: number[] }) => ({
    [`${name}_claims`]: claims.length,
    [`${name}_claim_p50_us`]: round(percentile(claims, 0.5)),
    [`${name}_claim_p99_us`]: round(percentile(claims, 0.99)),
    [`${name}_map_p50_us`]: round(percentile(lookups, 0.5), 3),
    [`${name}_map_p99_us`]: round(percentile(lookups, 0.99), 3),
    [`${name}_ratio_p50`]: round(percentile(claims, 0.5) / percentile(lookups, 0.5), 1),
    [`${name}_ratio_p99`]: round(percentile(claims, 0.99) / percentile(lookups, 0.99), 1),
  });
  return {
    ...figures('pool_10', small),
    ...figures('pool_1000', large),
    ratio_1000_to_10_p50: round(percentile(large.claims, 0.5) / percentile(small.claims, 0.5), 2),
    ratio_1000_to_10_p99: round(percentile(large.claims, 0.99) / percentile(small.claims, 0.99), 2),
  };
}

/**
 * Each runner's `running` update: when the fake published it, when a bare reader got it, when its
 * pool had it idle. The bare reader subscribes first, to the supervisor's topics, so that the fake
 * serves it no later than the supervisor.
 */
async function runningToClaimable(count: number): Promise<Record<string, number>> {
  const fake = await FakeNomad.start({ clock: systemClock, exec: false, eventBufferSize: 1_000, acting: ACTING });
  const published = new Map<string, number>();
  const read = new Map<string, number>();
  const idle = new Map<string, number>();
  const unlisten = fake.broker.listen((batch) => {
    for (const event of batch.Events) {
      const alloc = event.Payload.Allocation as { JobID?: string; ClientStatus?: string } | undefined;
      if (event.Topic === 'Allocation' && alloc?.ClientStatus === 'running' && alloc.JobID?.startsWith('2-') && !published.has(alloc.JobID)) published.set(alloc.JobID, wall());
    }
  });
  const reader = await readStream(fake.address, fake.cluster.index + 1, (events, now) => {
    for (const event of events) {
      const alloc = event.Payload.Allocation as { JobID?: string; ClientStatus?: string } | undefined;
      if (event.Topic === 'Allocation' && alloc?.ClientStatus === 'running' && alloc.JobID?.startsWith('2-') && !read.has(alloc.JobID)) read.set(alloc.JobID, now);
    }
  });
  const { supervisor, pools, nomad } = await poolsOver(fake.address);
  const subscription = pools.changes$.subscribe(() => {
    const now = wall();
    for (const runner of pools.environment(2)?.runners ?? []) if (runner.state === 'idle' && !idle.has(runner.id)) idle.set(runner.id, now);
  });
  await pools.putEnvironment({ id: 2, prewarmingPoolSize: count, driver: 'raw_exec' });
  await until(() => idleIn(pools, 2) === count);
  await sleep(50);
  subscription.unsubscribe();
  unlisten();
  reader.close();
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

interface StreamEvent {
  Topic: string;
  Payload: Record<string, unknown>;
}

/** A bare reader of the supervisor's topics from `index`: each NDJSON frame decoded with JSON.parse and handed over. */
async function readStream(address: string, index: number, onEvents: (events: StreamEvent[], at: number) => void): Promise<{ frames(): number; close(): void }> {
  const topics = SUPERVISOR_TOPICS.map((topic) => `topic=${topic}`).join('&');
  const response = await request(`${address}/v1/event/stream?${topics}&index=${index}`);
  let buffered = '';
  let frames = 0;
  response.body.on('data', (chunk: Buffer) => {
    const now = wall();
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      if (line === '' || line === '{}') continue;
      frames += 1;
      onEvents((JSON.parse(line) as { Events?: StreamEvent[] }).Events ?? [], now);
    }
  });
  response.body.on('error', () => undefined);
  return { frames: () => frames, close: () => response.body.destroy() };
}

/** A least-squares line through (claims, heap) samples: bytes per claim with ±2 standard errors. */
function heapFigures(samples: readonly { claims: number; heap: number }[]): Record<string, number> {
  const fit = slope(samples.map((s) => s.claims), samples.map((s) => s.heap));
  const first = samples[0];
  const last = samples.at(-1);
  return {
    heap_samples: samples.length,
    heap_after_warmup_mb: round((first?.heap ?? 0) / 2 ** 20),
    heap_end_mb: round((last?.heap ?? 0) / 2 ** 20),
    heap_claims_sampled: (last?.claims ?? 0) - (first?.claims ?? 0),
    heap_slope_bytes_per_claim: round(fit.slope, 1),
    heap_slope_pm_2se: round(2 * fit.standardError, 1),
  };
}

/**
 * Claims at RATE, each claimed runner destroyed at once, for WARMUP + SECONDS: heap sampled after
 * full GCs once a second after the warm-up (each sample pauses the claims for its GCs: those
 * seconds are left out of the rate).
 */
async function churn(address: string, fake: FakeNomadProcess): Promise<Record<string, number>> {
  const { supervisor, pools, nomad } = await poolsOver(address);
  await pools.putEnvironment({ id: 3, prewarmingPoolSize: POOL, driver: 'raw_exec' });
  await until(() => idleIn(pools, 3) === POOL);
  let claimed = 0;
  let empty = 0;
  let paused = 0;
  let pausedCpu = 0;
  let cpuFrom = { warden: 0, fake: 0 };
  const idleSeen: number[] = [];
  const samples: { claims: number; heap: number }[] = [];
  const start = wall();
  let measuredFrom = start;
  let claimedAtWarm = 0;
  let nextSample = start + WARMUP * 1000;
  while (wall() - start < (WARMUP + SECONDS) * 1000) {
    const due = Math.floor(((wall() - start - paused) / 1000) * RATE);
    while (claimed + empty < due) {
      try {
        void pools.claim(3, { inactivityTimeoutS: 60 }).destroy();
        claimed += 1;
      } catch (error) {
        if (!(error instanceof NoIdleRunnerError)) throw error;
        empty += 1;
      }
    }
    idleSeen.push(idleIn(pools, 3));
    if (wall() >= nextSample) {
      if (samples.length === 0) {
        measuredFrom = wall();
        claimedAtWarm = claimed;
        cpuFrom = { warden: cpuMs(), fake: await fake.cpuMs() };
      }
      const before = wall();
      const cpuBefore = cpuMs();
      samples.push({ claims: claimed, heap: heapUsed() });
      paused += wall() - before;
      pausedCpu += cpuMs() - cpuBefore;
      nextSample += 1000;
    }
    await sleep(TICK_MS);
  }
  const elapsed = (wall() - measuredFrom - paused) / 1000;
  const wardenCpu = cpuMs() - cpuFrom.warden - pausedCpu;
  const fakeCpu = (await fake.cpuMs()) - cpuFrom.fake;
  const measured = claimed - claimedAtWarm;
  await until(() => idleIn(pools, 3) === POOL && pools.environmentSummary(3)?.usedRunners === 0);
  await pools.deleteEnvironment(3);
  await supervisor.stop();
  await nomad.close();
  return {
    target_per_s: RATE,
    claims_per_s: round(measured / elapsed, 1),
    claims: claimed,
    empty_pool_claims: empty,
    pool_size: POOL,
    idle_min: Math.min(...idleSeen),
    idle_median: percentile(idleSeen, 0.5),
    // CPU time per claim and busy fraction of one core, of Warden's process and of the fake's.
    warden_cpu_ms_per_claim: round(wardenCpu / Math.max(1, measured), 3),
    warden_busy: round(wardenCpu / 1000 / elapsed, 2),
    fake_cpu_ms_per_claim: round(fakeCpu / Math.max(1, measured), 3),
    fake_busy: round(fakeCpu / 1000 / (elapsed + paused / 1000), 2),
    ...heapFigures(samples),
  };
}

/**
 * The floor: a bare client making a claim's Nomad traffic (a runner job registered, its evaluation
 * read; the used mark; the purge) at RATE, reading the supervisor's event stream, for the same
 * time; cycles/s counted after the same warm-up.
 */
async function bareClient(address: string, fake: FakeNomadProcess): Promise<Record<string, number>> {
  const nomad = new NomadClient({ address }, { gzip: false });
  const spec = checkEnvironmentSpec({ id: 4, prewarmingPoolSize: 0, driver: 'raw_exec' });
  const stream = await readStream(address, 0, () => undefined);
  let done = 0;
  let sent = 0;
  const inFlight = new Set<Promise<void>>();
  const cycle = async (n: number): Promise<void> => {
    const id = `4-00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
    const job = runnerJob(spec, id);
    const created = await nomad.registerJob(job, { enforceIndex: 0 });
    await nomad.getEvaluation(created.EvalID);
    await nomad.registerJob(withConfigMeta(job, { used: 'true', timeout: '60' }), { enforceIndex: created.JobModifyIndex });
    await nomad.deregisterJob(id, { purge: true });
    done += 1;
  };
  const start = wall();
  let doneAtWarm = -1;
  let measuredFrom = start;
  let cpuFrom = { client: 0, fake: 0 };
  while (wall() - start < (WARMUP + SECONDS) * 1000) {
    if (doneAtWarm < 0 && wall() - start >= WARMUP * 1000) {
      doneAtWarm = done;
      measuredFrom = wall();
      cpuFrom = { client: cpuMs(), fake: await fake.cpuMs() };
    }
    const due = Math.floor(((wall() - start) / 1000) * RATE);
    while (sent < due && inFlight.size < 2_000) {
      const work = cycle(sent++).finally(() => inFlight.delete(work));
      inFlight.add(work);
    }
    await sleep(TICK_MS);
  }
  const elapsed = (wall() - measuredFrom) / 1000;
  const cycles = done - Math.max(0, doneAtWarm);
  const clientCpu = cpuMs() - cpuFrom.client;
  const fakeCpu = (await fake.cpuMs()) - cpuFrom.fake;
  await Promise.allSettled([...inFlight]);
  stream.close();
  await nomad.close();
  return {
    target_per_s: RATE,
    cycles_per_s: round(cycles / elapsed, 1),
    stream_frames: stream.frames(),
    client_cpu_ms_per_cycle: round(clientCpu / Math.max(1, cycles), 3),
    client_busy: round(clientCpu / 1000 / elapsed, 2),
    fake_cpu_ms_per_cycle: round(fakeCpu / Math.max(1, cycles), 3),
    fake_busy: round(fakeCpu / 1000 / elapsed, 2),
  };
}

async function main(): Promise<void> {
  const fake = await FakeNomad.start({ clock: systemClock, exec: false, eventBufferSize: 1_000, acting: ACTING });
  const local = await poolsOver(fake.address);
  const claim = await claimLatencies(local.pools);
  await local.supervisor.stop();
  await local.nomad.close();
  await fake.close();
  const claimable = await runningToClaimable(100);
  const pools = await withFakeNomadProcess(churn);
  const bare = await withFakeNomadProcess(bareClient);
  console.log(JSON.stringify({
    claim,
    running_to_claimable: claimable,
    churn: { ...pools, bare_client: bare, ratio: round((pools.claims_per_s ?? 0) / (bare.cycles_per_s ?? 1), 2) },
  }, null, 2));
}

await main();
