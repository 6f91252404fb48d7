/**
 * The whole supervisor, measured from outside, beside the floor under any reader of the same stream.
 *
 * A trivial node:http server in its own process (bench/supervisor-server.ts) serialises the streams
 * before anything is timed and only writes those bytes: service jobs, their deployments and N
 * allocations (Nomad 1.1.2 payloads from the recordings). Each figure is taken in
 * a fresh process (bench/supervisor-run.ts), floor and Warden alternating, `--rounds` times
 * (`--largest-rounds` at the largest of several sizes); the
 * figures are medians, and each ratio is the median of the ratios of the runs taken side by side.
 *
 * - The floor: a bare undici client that cuts the body into lines and gives each to JSON.parse.
 * - Throughput (N = 10,000 and 100,000), on two streams of the same N allocations, each placed,
 *   running, then failing: `batched` (one job; every allocation placed, then every one running, then
 *   every one failing, 100 events a line) and `cluster` (shaped like a busy cluster: 8 jobs with their
 *   evaluations and deployments, placements, starts and failures interleaved, 1–200 allocation
 *   updates a line, log-uniform; see bench/supervisor-stream.ts). From the first byte to the last line
 *   parsed (floor) or Warden's last verdict (createSupervisor over the same socket, waiting on
 *   verdicts$). Every verdict here is reached by the data (a failed task, before a min_healthy_time of
 *   an hour): none waits for time, so the settle window and the freshness read never run; timers have
 *   their own figure below. Wall time, and CPU time of the reading process (its every thread: GC
 *   helpers included). Each run measures the stream twice: first cold (the first pass of a fresh
 *   process, as a `warden gate` in CI always is), then after the warm passes (the steady state).
 * - Latency: N allocations running (Warden: the heap per supervised allocation, after two full
 *   collections), then single-allocation failures, one line at a time, `--samples` measured after
 *   `--warmup` unmeasured (the JIT recompiles for them first: both readers settle after ~3,000
 *   lines; the figures are of the steady state): from the server writing
 *   the line (process.hrtime: the same monotonic clock in both processes) to the line parsed (floor)
 *   or its verdict (Warden, taken in its verdict subscriber); p50 / p99 / max, and what Warden adds
 *   over the floor (as ratios, and as time: see ADDED_LATENCY_TARGETS_MS). Beside them, the floor's
 *   reader with Warden's own line decoder in place of JSON.parse (exact timestamps, event checks):
 *   the part of Warden's latency that is decoding, and so the part that is judging (no target: it
 *   explains the one above). Unlike the other figures, the three readers run side by side in one
 *   process, taking the same lines in turns of 50, each first in every third round (whoever goes
 *   first in a round is slower): the machine's speed wanders by 1.3–1.6× for seconds at a time,
 *   which readers measured apart showed as their difference (see supervisor-run.ts).
 * - Timers (N = the largest): every allocation running and healthy through its min_healthy_time
 *   timer (10 s), or never started and unhealthy at its 5-minute healthy_deadline, on a
 *   VirtualClock: the inputs decoded up front by Warden's own decoder and handed to a Supervisor, then
 *   virtual time moved from one due timer to the next. The settle window and the freshness read are
 *   the real ones (FreshnessHorizon with a NomadClient reading this server's allocation index over
 *   loopback: one read per round, not per allocation). Wall time of the hand-over (`feed`) and of the
 *   verdicts (`decide`), and heap per allocation while they wait.
 *
 * Every figure with a target is printed beside it (`targets`): issue 22's (throughput ≥ 0.7× the
 * floor, CPU ≤ 1.5×, cold pass ≥ 0.5× the floor's cold pass, latency p50 ≤ 1.3× and p99 ≤ 1.5×, heap
 * ≤ 1,024 B per supervised allocation at the largest N) and issue 12's timer bound.
 *
 * Each measured steady-state figure follows the warm-up (`--warm-passes`: a small stream of 2,000
 * allocations of the same shape, that many times, each with a reader it then drops). Per-pass CPU
 * time keeps falling until about the fifth pass in both readers, so what one pass left to the measured run was the JIT's warm-up, a fixed cost that
 * weighed on 10,000 allocations ten times as much as on 100,000; the figures are of the steady state.
 *
 *   npx tsx bench/supervisor.ts [--allocations 10000,100000] [--rounds 3] [--largest-rounds 1] [--samples 1000] [--warmup 4000] [--warm-passes 6] [--batch 100]
 */
import { spawn, spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { median, numberOption, round } from './support/figures.js';

const SIZES = (process.argv.includes('--allocations') ? (process.argv[process.argv.indexOf('--allocations') + 1] ?? '') : '10000,100000').split(',').map(Number);
const ROUNDS = numberOption('rounds', 3);
/**
 * Rounds at the largest size: one by default. Each of its passes reads ~1 GB and lasts seconds, so one
 * pair varies less than a pair of small runs does, and three would keep the bench running for ~20
 * minutes on 2 cores.
 */
const LARGEST_ROUNDS = numberOption('largest-rounds', 1);
const roundsAt = (allocations: number): number => (allocations === Math.max(...SIZES) && SIZES.length > 1 ? LARGEST_ROUNDS : ROUNDS);
const SAMPLES = numberOption('samples', 1_000);
const WARMUP = numberOption('warmup', 4_000);
const WARM_PASSES = numberOption('warm-passes', 6);
const BATCH = numberOption('batch', 100);
/** Issue 22's targets (timerSeconds: issue 12's). */
const TARGETS = { throughputVsFloor: 0.7, cpuVsFloor: 1.5, coldThroughputVsFloor: 0.5, latencyP50VsFloor: 1.3, latencyP99VsFloor: 1.5, heapBytesPerAllocation: 1_024, timerSeconds: 5 };
/** The floor's single-line latency as issue 12 measured it, at 10,000 allocations (its smallest size, so the strictest), ms. */
const ISSUE_FLOOR_MS = { p50: 0.23, p99: 1.6 };
/**
 * The latency targets as time Warden adds over the floor: the issue's ratios applied to the floor it
 * measured, less that floor (p50 +0.069 ms, p99 +0.48 ms). This bench's floor is steady-state and
 * taken from the server's write, about 3.6× faster than the issue's, so 1.3× of it leaves Warden
 * about 19 µs: less than exact timestamp decoding and one cold judging take between them. Both forms
 * are printed.
 */
const ADDED_LATENCY_TARGETS_MS = {
  p50: round((TARGETS.latencyP50VsFloor - 1) * ISSUE_FLOOR_MS.p50, 3),
  p99: round((TARGETS.latencyP99VsFloor - 1) * ISSUE_FLOOR_MS.p99, 3),
};

const here = import.meta.dirname;
/** The streams measured for throughput: name, and the floor's and Warden's modes of bench/supervisor-run.ts. */
const STREAMS = [
  ['batched', 'floor-throughput', 'warden-throughput'],
  ['cluster', 'floor-cluster', 'warden-cluster'],
] as const;

async function startServer(allocations: number): Promise<{ address: string; stop: () => void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(here, 'supervisor-server.ts'), String(allocations), String(BATCH), String(WARMUP + SAMPLES)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const first = await createInterface({ input: child.stdout })[Symbol.asyncIterator]().next();
  if (first.done) throw new Error('bench server ended before giving its address');
  const { address } = JSON.parse(first.value as string) as { address: string };
  return { address, stop: () => child.stdin.end() };
}

function run<T>(mode: string, address: string, allocations: number): T {
  const child = spawnSync(process.execPath, ['--import', 'tsx', join(here, 'supervisor-run.ts'), mode, address, String(allocations), String(SAMPLES), String(WARMUP), String(WARM_PASSES)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 16 * 1024 * 1024,
  });
  if (child.status !== 0) throw new Error(`bench/supervisor-run.ts ${mode} exited with ${child.status ?? child.signal}`);
  return JSON.parse(child.stdout) as T;
}

/** Runs of each mode side by side, `ROUNDS` times, each round starting with the next mode; the runs of each mode, in order. */
function sideBySide<T>(modes: readonly string[], address: string, allocations: number): T[][] {
  const runs: T[][] = modes.map(() => []);
  const rounds = roundsAt(allocations);
  for (let round = 0; round < rounds; round++) {
    console.error(`  ${allocations}: ${modes.join(' / ')}, round ${round + 1} of ${rounds}`);
    for (let i = 0; i < modes.length; i++) {
      const m = (round + i) % modes.length;
      (runs[m] as T[]).push(run<T>(modes[m] as string, address, allocations));
    }
  }
  return runs;
}

/** Floor and Warden runs side by side. */
function paired<T>(floorMode: string, wardenMode: string, address: string, allocations: number): Pair<T> {
  const [floor, warden] = sideBySide<T>([floorMode, wardenMode], address, allocations) as [T[], T[]];
  return { floor, warden };
}

interface Throughput {
  wallMs: number;
  cpuMs: number;
  /** The same stream, the process's first pass. */
  cold: { wallMs: number; cpuMs: number };
  events: number;
  /** CPU ms of each warm pass before the measured run. */
  warmCpuMs: number[];
}
interface Latency {
  latenciesMs: Record<'floor' | 'decoder' | 'warden', number[]>;
  heapBytesPerAllocation: number;
}
interface Timers {
  kind: string;
  healthy: number;
  unhealthy: number;
  virtualSeconds: number;
  timerRounds: number;
  feed: { wallMs: number; cpuMs: number };
  decide: { wallMs: number; cpuMs: number };
  heapBytesPerAllocation: { waiting: number; decided: number };
}

type Percentiles = { p50: number; p99: number; max: number };
function percentiles(values: readonly number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1) ?? 0 };
}

/** The median of each run's own figure. */
function medianOf<T>(runs: readonly T[], figure: (run: T) => number): number {
  return median(runs.map(figure));
}

type Pair<T> = { floor: T[]; warden: T[] };
/** The median, over the runs taken side by side, of `compare(Warden's figure, the floor's)`. */
function compared<T>(pair: Pair<T>, figure: (run: T) => number, compare: (warden: number, floor: number) => number): number {
  return median(pair.warden.map((warden, i) => compare(figure(warden), figure(pair.floor[i] as T))));
}
const ratio = (warden: number, floor: number): number => warden / floor;
const inverseRatio = (warden: number, floor: number): number => floor / warden;
const difference = (warden: number, floor: number): number => warden - floor;

const targets: { figure: string; value: number; target: string; met: boolean }[] = [];
const target = (figure: string, value: number, bound: number, atLeast: boolean): void => {
  targets.push({ figure, value: round(value, 3), target: `${atLeast ? '≥' : '≤'} ${bound}`, met: atLeast ? value >= bound : value <= bound });
};

const sizes: Record<string, unknown> = {};
let timers: Record<string, unknown> | undefined;
// Each single line fails an allocation of its own.
if (WARMUP + SAMPLES > Math.min(...SIZES)) throw new Error(`--warmup + --samples (${WARMUP + SAMPLES}) is more than the smallest --allocations`);
for (const allocations of SIZES) {
  console.error(`bench/supervisor: ${allocations} allocations: building the server's streams …`);
  const server = await startServer(allocations);
  try {
    const streams: Record<string, unknown> = {};
    for (const [stream, floorMode, wardenMode] of STREAMS) {
      const throughput = paired<Throughput>(floorMode, wardenMode, server.address, allocations);
      const events = throughput.floor[0]?.events ?? 0;
      const side = (runs: Throughput[]) => ({
        wallMs: round(medianOf(runs, (r) => r.wallMs), 2),
        cpuMs: round(medianOf(runs, (r) => r.cpuMs), 2),
        eventsPerSecond: Math.round(events / (medianOf(runs, (r) => r.wallMs) / 1000)),
        cold: { wallMs: round(medianOf(runs, (r) => r.cold.wallMs), 2), cpuMs: round(medianOf(runs, (r) => r.cold.cpuMs), 2) },
        // Each warm pass's CPU (median over the runs): where it levels off, the JIT has settled.
        warmPassCpuMs: Array.from({ length: WARM_PASSES }, (_, pass) => Math.round(medianOf(runs, (r) => r.warmCpuMs[pass] ?? Number.NaN))),
      });
      const ratios = {
        throughputVsFloor: round(compared(throughput, (r) => r.wallMs, inverseRatio), 3),
        cpuVsFloor: round(compared(throughput, (r) => r.cpuMs, ratio), 3),
        coldThroughputVsFloor: round(compared(throughput, (r) => r.cold.wallMs, inverseRatio), 3),
        coldCpuVsFloor: round(compared(throughput, (r) => r.cold.cpuMs, ratio), 3),
      };
      streams[stream] = { events, floor: side(throughput.floor), warden: side(throughput.warden), ratios };
      target(`${stream} stream, ${allocations}: throughput vs floor (wall)`, ratios.throughputVsFloor, TARGETS.throughputVsFloor, true);
      target(`${stream} stream, ${allocations}: CPU vs floor`, ratios.cpuVsFloor, TARGETS.cpuVsFloor, false);
      target(`${stream} stream, ${allocations}: cold pass throughput vs floor's cold pass (wall)`, ratios.coldThroughputVsFloor, TARGETS.coldThroughputVsFloor, true);
    }
    const [latencyRuns] = sideBySide<Latency>(['latency'], server.address, allocations) as [Latency[]];
    // Each run's percentiles, worked out once; the readers of one run were side by side in one process.
    const [floorP, decoderP, wardenP] = (['floor', 'decoder', 'warden'] as const).map((reader) => latencyRuns.map((r) => percentiles(r.latenciesMs[reader]))) as [Percentiles[], Percentiles[], Percentiles[]];
    const latency = { floor: floorP, warden: wardenP };
    const decoding = { floor: floorP, warden: decoderP };
    const latencySide = (each: Percentiles[]) => ({
      p50: round(median(each.map((p) => p.p50)), 3),
      p99: round(median(each.map((p) => p.p99)), 3),
      max: round(Math.max(...each.map((p) => p.max)), 3),
    });
    const ratios = {
      latencyP50VsFloor: round(compared(latency, (r) => r.p50, ratio), 3),
      latencyP99VsFloor: round(compared(latency, (r) => r.p99, ratio), 3),
      decoderLatencyP50VsFloor: round(compared(decoding, (r) => r.p50, ratio), 3),
    };
    const added = {
      p50Ms: round(compared(latency, (r) => r.p50, difference), 3),
      p99Ms: round(compared(latency, (r) => r.p99, difference), 3),
    };
    const heap = medianOf(latencyRuns, (r) => r.heapBytesPerAllocation);
    sizes[allocations] = {
      streams,
      latencyMs: { samples: SAMPLES, warmup: WARMUP, floor: latencySide(floorP), decoder: latencySide(decoderP), warden: latencySide(wardenP) },
      heapBytesPerSupervisedAllocation: Math.round(heap),
      latencyRatios: ratios,
      latencyAddedOverFloor: added,
    };
    target(`latency p50 vs floor, ${allocations}`, ratios.latencyP50VsFloor, TARGETS.latencyP50VsFloor, false);
    target(`latency p99 vs floor, ${allocations}`, ratios.latencyP99VsFloor, TARGETS.latencyP99VsFloor, false);
    target(`latency p50 added over floor, ms, ${allocations}`, added.p50Ms, ADDED_LATENCY_TARGETS_MS.p50, false);
    target(`latency p99 added over floor, ms, ${allocations}`, added.p99Ms, ADDED_LATENCY_TARGETS_MS.p99, false);
    if (allocations === Math.max(...SIZES)) {
      target(`heap bytes per supervised allocation, ${allocations}`, heap, TARGETS.heapBytesPerAllocation, false);
      timers = {};
      for (const kind of ['healthy', 'deadline'] as const) {
        const runs: Timers[] = [];
        for (let r = 0; r < roundsAt(allocations); r++) {
          console.error(`  ${allocations}: timers-${kind}, round ${r + 1} of ${roundsAt(allocations)}`);
          runs.push(run<Timers>(`timers-${kind}`, server.address, allocations));
        }
        const [first] = runs as [Timers];
        const totalSeconds = medianOf(runs, (t) => (t.feed.wallMs + t.decide.wallMs) / 1000);
        timers[kind] = {
          allocations,
          healthy: first.healthy,
          unhealthy: first.unhealthy,
          virtualSeconds: round(first.virtualSeconds, 2),
          freshnessRounds: first.timerRounds,
          feedSeconds: round(medianOf(runs, (t) => t.feed.wallMs / 1000), 3),
          decideSeconds: round(medianOf(runs, (t) => t.decide.wallMs / 1000), 3),
          totalSeconds: round(totalSeconds, 3),
          heapBytesPerAllocation: {
            waiting: Math.round(medianOf(runs, (t) => t.heapBytesPerAllocation.waiting)),
            decided: Math.round(medianOf(runs, (t) => t.heapBytesPerAllocation.decided)),
          },
        };
        target(`${allocations} allocations decided by timers (${kind}): feed + decide, seconds`, totalSeconds, TARGETS.timerSeconds, false);
      }
    }
  } finally {
    server.stop();
  }
}

console.log(
  JSON.stringify(
    {
      bench: 'supervisor',
      rounds: Object.fromEntries(SIZES.map((size) => [size, roundsAt(size)])),
      warmPasses: WARM_PASSES,
      batch: BATCH,
      machine: { cpus: availableParallelism(), node: process.version },
      allocations: sizes,
      ...(timers ? { timers } : {}),
      targets,
    },
    null,
    2,
  ),
);
