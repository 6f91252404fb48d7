/**
 * The whole supervisor under a 10,000-allocation deployment: a stream built from the recorded
 * many_allocs payloads (one job, one deployment, every allocation placed, then running), replayed
 * by FakeNomad over loopback on a VirtualClock, followed by createSupervisor through the real
 * event stream, client, job cache and health machines. Beside it, in the same run, a bare
 * JSON.parse of the same lines.
 *
 * - placement: every pending allocation published at once; events/s until all are supervised.
 * - FakeNomad shares this process: the time its replay spends parsing and applying lines (inside
 *   the clock advances) is measured and taken out; its socket writes are not.
 * - heap: bytes per supervised allocation once all are tracked (FakeNomad's own copy of the same
 *   state, measured alone first, subtracted).
 * - running: one batch of 100 running updates at a time, each already past min_healthy_time, so
 *   the update completes health; latency from FakeNomad publishing the batch to the verdict.
 *
 *   npx tsx bench/supervisor.ts [--allocations 10000] [--batch 100]
 */
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { join } from 'node:path';
import { VirtualClock, settle } from '../src/clock/index.js';
import { NomadClient } from '../src/nomad/client.js';
import { createSupervisor } from '../src/supervisor/index.js';
import { FakeNomad } from '../src/testing/fakeNomad.js';
import { parseLossless, stringifyLossless } from '../src/testing/losslessJson.js';
import { isHeartbeatLine, readScenario, type RecordedLine } from '../src/testing/recording.js';

const args = process.argv.slice(2);
const option = (name: string, fallback: number): number => {
  const at = args.indexOf(`--${name}`);
  return at === -1 ? fallback : Number(args[at + 1]);
};
const ALLOCATIONS = option('allocations', 10_000);
const BATCH = option('batch', 100);

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

type Json = Record<string, unknown>;
interface Event {
  Topic: string;
  Type: string;
  Key: string;
  Namespace: string;
  FilterKeys: string[];
  Index: number;
  Payload: Json;
}

// Templates: the recorded many_allocs job, deployment and one allocation pending, then running.
const scenario = readScenario(join(import.meta.dirname, '..', 'test', 'fixtures', 'nomad-1.1.2', 'scenarios', 'many_allocs'));
const recorded = scenario.stream.filter((line) => !isHeartbeatLine(line)).flatMap((line) => (parseLossless(line.raw) as unknown as { Events: Event[] }).Events);
const find = (test: (event: Event) => boolean): Event => {
  const event = recorded.find(test);
  if (!event) throw new Error('template missing from the many_allocs recording');
  return event;
};
const allocOf = (event: Event): Json => event.Payload.Allocation as Json;
const jobTemplate = find((e) => e.Topic === 'Job' && e.Type === 'JobRegistered').Payload.Job as Json;
const deploymentTemplate = find((e) => e.Topic === 'Deployment').Payload.Deployment as Json;
const pendingTemplate = allocOf(find((e) => e.Topic === 'Allocation' && allocOf(e).ClientStatus === 'pending'));
const runningTemplate = allocOf(find((e) => e.Topic === 'Allocation' && allocOf(e).ClientStatus === 'running'));

const START = Date.parse(scenario.meta.stream_opened_at);
const RUNNING_AT = 10_000;
const jobId = 'bench-allocs';
const deploymentId = 'bench-0000-0000-0000-deployment0';
const allocId = (i: number): string => `${i.toString(16).padStart(8, '0')}-bench-4000-8000-000000000000`;
const iso = (ms: number): string => new Date(ms).toISOString();

function buildLines(): { lines: RecordedLine[]; events: number; placementLines: number } {
  let index = 1_000;
  const lines: RecordedLine[] = [];
  let events = 0;
  const push = (t: number, batch: Event[]): void => {
    lines.push({ t, raw: stringifyLossless({ Events: batch, Index: index }) });
    events += batch.length;
  };
  const event = (Topic: string, Type: string, Key: string, FilterKeys: string[], Payload: Json): Event => ({
    Topic, Type, Key, Namespace: 'default', FilterKeys, Index: index, Payload,
  });
  const group = (jobTemplate.TaskGroups as Json[])[0]!;
  const job = {
    ...jobTemplate,
    ID: jobId,
    Name: jobId,
    JobModifyIndex: index,
    ModifyIndex: index,
    CreateIndex: index,
    TaskGroups: [{ ...group, Count: ALLOCATIONS }],
  };
  push(0, [event('Job', 'JobRegistered', jobId, [], { Job: job })]);
  index++;
  const deployment = {
    ...deploymentTemplate,
    ID: deploymentId,
    JobID: jobId,
    JobVersion: 0,
    TaskGroups: { app: { ...(deploymentTemplate.TaskGroups as Json).app as Json, DesiredTotal: ALLOCATIONS } },
  };
  for (let first = 0; first < ALLOCATIONS; first += BATCH, index++) {
    const batch: Event[] = first === 0 ? [event('Deployment', 'PlanResult', deploymentId, [jobId], { Deployment: deployment })] : [];
    for (let i = first; i < Math.min(ALLOCATIONS, first + BATCH); i++) {
      const alloc = { ...pendingTemplate, ID: allocId(i), Name: `${jobId}.app[${i}]`, JobID: jobId, DeploymentID: deploymentId, CreateIndex: index, ModifyIndex: index, AllocModifyIndex: index };
      batch.push(event('Allocation', 'PlanResult', allocId(i), [jobId, deploymentId], { Allocation: alloc }));
    }
    push(1, batch);
  }
  const placementLines = lines.length;
  const mainState = (runningTemplate.TaskStates as Record<string, Json>).main!;
  for (let first = 0, k = 0; first < ALLOCATIONS; first += BATCH, index++, k++) {
    const t = RUNNING_AT + k * 10;
    // Started min_healthy_time (1s) and more before this update: the update completes health.
    const taskStates = { main: { ...mainState, State: 'running', StartedAt: iso(START + t - 2_000) } };
    const batch: Event[] = [];
    for (let i = first; i < Math.min(ALLOCATIONS, first + BATCH); i++) {
      const alloc = { ...runningTemplate, ID: allocId(i), Name: `${jobId}.app[${i}]`, JobID: jobId, DeploymentID: deploymentId, ModifyIndex: index, TaskStates: taskStates };
      batch.push(event('Allocation', 'AllocationUpdated', allocId(i), [jobId, deploymentId], { Allocation: alloc }));
    }
    push(t, batch);
  }
  return { lines, events, placementLines };
}

const { lines, events, placementLines } = buildLines();

/** Bare JSON.parse of the same lines: events per second (median of 5). */
function parseRate(): number {
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const start = performance.now();
    for (const line of lines) JSON.parse(line.raw);
    runs.push(events / ((performance.now() - start) / 1000));
  }
  return runs.sort((a, b) => a - b)[2]!;
}

/** FakeNomad's own memory for the placed allocations, to subtract from the supervised run. */
async function fakeOnlyHeap(): Promise<number> {
  const clock = new VirtualClock({ start: START });
  const fake = await FakeNomad.start({ clock, eventBufferSize: 1_000 });
  const before = heapUsed();
  fake.replay(lines.slice(0, placementLines), { immediate: true });
  const after = heapUsed();
  await fake.close();
  return after - before;
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let turns = 0; !condition(); turns++) {
    if (turns > 5_000_000) throw new Error(`bench stalled waiting for ${what}`);
    await settle(1);
  }
}

const parseEventsPerSec = parseRate();
const fakeHeap = await fakeOnlyHeap();

const clock = new VirtualClock({ start: START });
const fake = await FakeNomad.start({ clock, eventBufferSize: 1_000 });
const nomad = new NomadClient({ address: fake.address }, { clock, gzip: false });
const supervisor = createSupervisor({ nomad, clock, historySize: ALLOCATIONS });
let verdicts = 0;
const verdictAt = new Map<string, number>();
supervisor.verdicts$.subscribe((record) => {
  verdicts++;
  verdictAt.set(record.alloc.allocId, performance.now());
});
const publishedAt = new Map<string, number>();
fake.broker.listen((batch) => {
  const now = performance.now();
  for (const event of batch.Events) if (event.Topic === 'Allocation') publishedAt.set(event.Key, now);
});
await until(() => JSON.stringify(supervisor.actor.getSnapshot().value) === '{"running":"streaming"}', 'the stream');

const heapBefore = heapUsed();
fake.replay(lines);
await until(() => supervisor.supervised === 0 && fake.cluster.job(jobId) !== undefined, 'the job');
/** Advances the clock, returning how long FakeNomad's replay took (parsing and applying its lines, in this process). */
function advanceTo(time: number): number {
  const start = performance.now();
  clock.advanceTo(time);
  return performance.now() - start;
}

const placementStart = performance.now();
let fakeMs = advanceTo(START + 1);
await until(() => supervisor.supervised === ALLOCATIONS, 'every allocation supervised');
const placementSeconds = (performance.now() - placementStart - fakeMs) / 1000;
const heapPerAllocation = (heapUsed() - heapBefore - fakeHeap) / ALLOCATIONS;

const runningStart = performance.now();
const placementFakeMs = fakeMs;
fakeMs = 0;
for (let k = 0; k * BATCH < ALLOCATIONS; k++) {
  fakeMs += advanceTo(START + RUNNING_AT + k * 10);
  const expected = Math.min(ALLOCATIONS, (k + 1) * BATCH);
  await until(() => verdicts >= expected, `verdicts of batch ${k}`);
}
const runningSeconds = (performance.now() - runningStart - fakeMs) / 1000;
const latencies = [...verdictAt].map(([id, at]) => at - (publishedAt.get(id) ?? at)).sort((a, b) => a - b);
const percentile = (p: number): number => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!;

await supervisor.stop();
await nomad.close();
await fake.close();

const placementEventsPerSec = (ALLOCATIONS + 1) / placementSeconds;
const runningEventsPerSec = ALLOCATIONS / runningSeconds;
console.log(
  JSON.stringify(
    {
      bench: 'supervisor',
      allocations: ALLOCATIONS,
      batch: BATCH,
      streamEvents: events,
      supervisor: {
        placementEventsPerSec: Math.round(placementEventsPerSec),
        runningEventsPerSec: Math.round(runningEventsPerSec),
        heapBytesPerSupervisedAllocation: Math.round(heapPerAllocation),
        verdictLatencyMs: { p50: Number(percentile(50).toFixed(2)), p99: Number(percentile(99).toFixed(2)), max: Number(latencies.at(-1)!.toFixed(2)) },
        verdicts,
      },
      baseline: { jsonParseEventsPerSec: Math.round(parseEventsPerSec), fakeNomadHeapBytesPerAllocation: Math.round(fakeHeap / ALLOCATIONS) },
      // FakeNomad runs in this process; its synchronous replay work is taken out of the timings.
      excludedFakeNomadMs: { placement: Math.round(placementFakeMs), running: Math.round(fakeMs) },
      ratios: {
        placementVsJsonParse: Number((placementEventsPerSec / parseEventsPerSec).toFixed(4)),
        runningVsJsonParse: Number((runningEventsPerSec / parseEventsPerSec).toFixed(4)),
      },
    },
    null,
    2,
  ),
);
