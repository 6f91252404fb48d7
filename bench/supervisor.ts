/**
 * The whole supervisor under a 10,000-allocation deployment (bench/supervisor-input.ts: one job,
 * one deployment, every allocation placed, then running), served by FakeNomad over loopback from
 * its own process (bench/supervisor-server.ts, as a real Nomad is) and followed by
 * createSupervisor on a VirtualClock through the real event stream, client, job cache and health
 * machines. Beside it, in the same run, a bare JSON.parse of the same lines.
 *
 * - placement: every pending allocation published at once; events/s until all are supervised.
 * - heap: bytes per supervised allocation once all are tracked (FakeNomad is not in this process).
 * - running: one batch of running updates at a time, each completing its allocations' health;
 *   latency from FakeNomad publishing the batch to each verdict (wall clocks of one machine).
 * - CPU: this process's CPU time per event, beside JSON.parse's.
 *
 *   npx tsx bench/supervisor.ts [--allocations 10000] [--batch 100]
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { VirtualClock, settle } from '../src/clock/index.js';
import { NomadClient } from '../src/nomad/client.js';
import { createSupervisor } from '../src/supervisor/index.js';
import { benchStream } from './supervisor-input.js';
import { median, numberOption } from './support/figures.js';
import { heapUsed } from './support/heap.js';

const ALLOCATIONS = numberOption('allocations', 10_000);
const BATCH = numberOption('batch', 100);

const wallNow = (): number => performance.timeOrigin + performance.now();
const cpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

const stream = benchStream(ALLOCATIONS, BATCH);

/** Bare JSON.parse of the same lines: events per wall second and CPU ms per event (median of 5). */
function parseBaseline(): { eventsPerSec: number; cpuMsPerEvent: number } {
  const runs: { rate: number; cpu: number }[] = [];
  for (let r = 0; r < 5; r++) {
    const [start, cpu] = [performance.now(), cpuMs()];
    for (const line of stream.lines) JSON.parse(line.raw);
    runs.push({ rate: stream.events / ((performance.now() - start) / 1000), cpu: (cpuMs() - cpu) / stream.events });
  }
  return { eventsPerSec: median(runs.map((r) => r.rate)), cpuMsPerEvent: median(runs.map((r) => r.cpu)) };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let turns = 0; !condition(); turns++) {
    if (turns > 10_000_000) throw new Error(`bench stalled waiting for ${what}`);
    await settle(1);
  }
}

const baseline = parseBaseline();

// FakeNomad in its own process; each `advance(t)` makes it publish what is due by stream time t.
const server = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'supervisor-server.ts'), String(ALLOCATIONS), String(BATCH)], {
  stdio: ['pipe', 'pipe', 'inherit'],
});
const replies = createInterface({ input: server.stdout })[Symbol.asyncIterator]();
const address = (await replies.next()).value as string;
async function publish(t: number): Promise<number> {
  server.stdin.write(`${t}\n`);
  return Number((await replies.next()).value);
}

const clock = new VirtualClock({ start: stream.start });
const nomad = new NomadClient({ address }, { clock, gzip: false });
const supervisor = createSupervisor({ nomad, clock, historySize: ALLOCATIONS });
let verdicts = 0;
const verdictAt = new Map<string, number>();
supervisor.verdicts$.subscribe((record) => {
  verdicts++;
  verdictAt.set(record.alloc.allocId, wallNow());
});
await until(() => JSON.stringify(supervisor.actor.getSnapshot().value) === '{"running":"streaming"}', 'the stream');
await publish(0);
const heapBefore = heapUsed();

const placement = { start: performance.now(), cpu: cpuMs() };
clock.advanceTo(stream.start + 1);
await publish(1);
await until(() => supervisor.supervised === ALLOCATIONS, 'every allocation supervised');
const placementSeconds = (performance.now() - placement.start) / 1000;
const placementCpuMs = cpuMs() - placement.cpu;
const heapPerAllocation = (heapUsed() - heapBefore) / ALLOCATIONS;

const latencies: number[] = [];
const running = { start: performance.now(), cpu: cpuMs() };
for (let k = 0; k * BATCH < ALLOCATIONS; k++) {
  const t = stream.runningAt + k * 10;
  clock.advanceTo(stream.start + t);
  const publishedAt = await publish(t);
  const expected = Math.min(ALLOCATIONS, (k + 1) * BATCH);
  await until(() => verdicts >= expected, `verdicts of batch ${k}`);
  for (let i = k * BATCH; i < expected; i++) {
    const id = `${i.toString(16).padStart(8, '0')}-bench-4000-8000-000000000000`;
    latencies.push((verdictAt.get(id) ?? publishedAt) - publishedAt);
  }
}
const runningSeconds = (performance.now() - running.start) / 1000;
const runningCpuMs = cpuMs() - running.cpu;
latencies.sort((a, b) => a - b);
const percentile = (p: number): number => Number(latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!.toFixed(2));

await supervisor.stop();
await nomad.close();
server.stdin.end();

const placementEvents = ALLOCATIONS + 1;
const round = (value: number, digits = 4): number => Number(value.toFixed(digits));
console.log(
  JSON.stringify(
    {
      bench: 'supervisor',
      allocations: ALLOCATIONS,
      batch: BATCH,
      streamEvents: stream.events,
      supervisor: {
        placementEventsPerSec: Math.round(placementEvents / placementSeconds),
        runningEventsPerSec: Math.round(ALLOCATIONS / runningSeconds),
        cpuMsPerEvent: { placement: round(placementCpuMs / placementEvents), running: round(runningCpuMs / ALLOCATIONS) },
        heapBytesPerSupervisedAllocation: Math.round(heapPerAllocation),
        verdictLatencyMs: { p50: percentile(50), p99: percentile(99), max: percentile(100) },
        verdicts,
      },
      baseline: { jsonParseEventsPerSec: Math.round(baseline.eventsPerSec), jsonParseCpuMsPerEvent: round(baseline.cpuMsPerEvent) },
      ratios: {
        placementVsJsonParse: round(placementEvents / placementSeconds / baseline.eventsPerSec),
        runningVsJsonParse: round(ALLOCATIONS / runningSeconds / baseline.eventsPerSec),
        cpuPerEventVsJsonParse: { placement: round(placementCpuMs / placementEvents / baseline.cpuMsPerEvent, 2), running: round(runningCpuMs / ALLOCATIONS / baseline.cpuMsPerEvent, 2) },
      },
    },
    null,
    2,
  ),
);
