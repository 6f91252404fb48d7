/**
 * Soak: the supervisor's memory under endless churn. Jobs come and go (registered, deployed, five
 * allocations placed, running, healthy, stopped, purged; a new job ID each time, as a real cluster
 * churns), fed as cluster inputs on a VirtualClock, so only Warden is measured (no server, no
 * sockets). After a warm-up that fills every bounded memory (the verdict book, the job cache), the
 * heap must stay flat: the figure is the growth per allocation after warm-up, beside the heap at the
 * end of warm-up (the baseline of the same run).
 *
 *   npx tsx bench/soak.ts [--warmup 6000] [--jobs 20000] [--history 2000]
 */
import { Subject } from 'rxjs';
import { VirtualClock } from '../src/clock/index.js';
import { NomadClient } from '../src/nomad/client.js';
import type { Allocation, Deployment, Job } from '../src/nomad/types.js';
import { Supervisor, type SupervisorInput } from '../src/supervisor/index.js';
import { numberOption } from './support/figures.js';
import { heapUsed } from './support/heap.js';

const WARMUP_JOBS = numberOption('warmup', 6_000);
const JOBS = numberOption('jobs', 20_000);
const PER_JOB = 5;
const START = Date.UTC(2026, 11, 1);
const MIN_HEALTHY_NS = 2_000_000_000;

const nanos = (ms: number): bigint => BigInt(Math.round(ms)) * 1_000_000n;
const iso = (ms: number): string => new Date(ms).toISOString();

let index = 10;

function job(id: string, fields: Partial<Job> = {}): Job {
  return {
    ID: id, Name: id, Namespace: 'default', Type: 'service', Version: 0, Status: 'running', JobModifyIndex: index, ModifyIndex: index,
    Update: { HealthCheck: 'task_states', MinHealthyTime: MIN_HEALTHY_NS, HealthyDeadline: 60_000_000_000, ProgressDeadline: 120_000_000_000, MaxParallel: PER_JOB },
    TaskGroups: [{ Name: 'app', Count: PER_JOB, Tasks: [{ Name: 'main', Driver: 'raw_exec' }] }],
    ...fields,
  } as unknown as Job;
}

function deployment(jobId: string, status: string): Deployment {
  return {
    ID: `${jobId}-deployment`, Namespace: 'default', JobID: jobId, JobVersion: 0, Status: status, StatusDescription: status,
    TaskGroups: { app: { DesiredTotal: PER_JOB, PlacedAllocs: PER_JOB, HealthyAllocs: 0, UnhealthyAllocs: 0, DesiredCanaries: 0, Promoted: false } },
    CreateIndex: index, ModifyIndex: index,
  } as unknown as Deployment;
}

/** One allocation at a stage of its life: placed, running since `started`, or stopped and complete at `stopped`. */
function allocation(jobId: string, n: number, placed: number, started?: number, stopped?: number): Allocation {
  const events: { Type: string; Time: bigint }[] = [];
  if (started !== undefined) events.push({ Type: 'Received', Time: nanos(started - 50) }, { Type: 'Started', Time: nanos(started) });
  if (stopped !== undefined) events.push({ Type: 'Killing', Time: nanos(stopped) }, { Type: 'Killed', Time: nanos(stopped + 10) });
  const taskState = started === undefined ? undefined : {
    State: stopped === undefined ? 'running' : 'dead', Failed: false, Restarts: 0, LastRestart: null,
    StartedAt: iso(started), FinishedAt: stopped === undefined ? null : iso(stopped + 10), Events: events,
  };
  return {
    ID: `${jobId}-${n}`.padEnd(36, '0'), Name: `${jobId}.app[${n}]`, Namespace: 'default', JobID: jobId, TaskGroup: 'app', DeploymentID: `${jobId}-deployment`,
    DesiredStatus: stopped === undefined ? 'run' : 'stop', ClientStatus: stopped !== undefined ? 'complete' : started !== undefined ? 'running' : 'pending',
    CreateIndex: index, ModifyIndex: index, AllocModifyIndex: index, CreateTime: nanos(placed), ModifyTime: nanos(stopped ?? started ?? placed),
    ...(taskState ? { TaskStates: { main: taskState } } : {}),
  } as unknown as Allocation;
}

const clock = new VirtualClock({ start: START });
const source = new Subject<SupervisorInput>();
// Never asked: every job arrives with its own events. A closed loopback port, were it asked.
const nomad = new NomadClient({ address: 'http://127.0.0.1:9' }, { clock });
// Histories kept small, so that the warm-up fills every bounded memory (the default keeps 10,000).
const HISTORY = numberOption('history', 2_000);
const supervisor = new Supervisor({ nomad, clock, source, historySize: HISTORY });
let verdicts = 0;
supervisor.verdicts$.subscribe(() => verdicts++);
const send = (input: SupervisorInput): void => source.next(input);

/** Lets the promise continuations of what was sent run (job lookups resolve through promises). */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * One job's whole life, over 15 s of virtual time: placed, running, healthy after 2 s, stopped at
 * 10 s; then purged, except every third job, only stopped (Nomad keeps it until its GC). One
 * allocation of each job is never reported by its client (placed, then stopped: left unjudged).
 */
async function churn(n: number): Promise<void> {
  const id = `soak-${n}`;
  const placed = clock.now();
  index++;
  send({ kind: 'job', job: job(id), index });
  send({ kind: 'deployment', deployment: deployment(id, 'running'), index });
  for (let a = 0; a < PER_JOB; a++) send({ kind: 'allocation', allocation: allocation(id, a, placed), index });
  await turn();
  clock.advance(1_000);
  index++;
  const reported = PER_JOB - 1;
  for (let a = 0; a < reported; a++) send({ kind: 'allocation', allocation: allocation(id, a, placed, placed + 500), index });
  await turn();
  clock.advance(9_000);
  index++;
  send({ kind: 'deployment', deployment: deployment(id, 'successful'), index });
  for (let a = 0; a < PER_JOB; a++) {
    send({ kind: 'allocation', allocation: a < reported ? allocation(id, a, placed, placed + 500, clock.now()) : { ...allocation(id, a, placed), DesiredStatus: 'stop' }, index });
  }
  send({ kind: 'job', job: job(id, { Stop: true, Status: 'dead' }), index, ...(n % 3 === 0 ? {} : { deleted: true }) });
  await turn();
  clock.advance(5_000);
}

const samples: { allocations: number; heap: number }[] = [];
for (let n = 0; n < JOBS; n++) {
  await churn(n);
  if (n + 1 >= WARMUP_JOBS && (n + 1 - WARMUP_JOBS) % 1_000 === 0) samples.push({ allocations: (n + 1) * PER_JOB, heap: heapUsed() });
}
await supervisor.stop();

const first = samples[0] as { allocations: number; heap: number };
const last = samples[samples.length - 1] as { allocations: number; heap: number };
// Least-squares slope of heap over allocations after warm-up: bytes kept per allocation that passed.
const meanX = samples.reduce((sum, s) => sum + s.allocations, 0) / samples.length;
const meanY = samples.reduce((sum, s) => sum + s.heap, 0) / samples.length;
const slope = samples.reduce((sum, s) => sum + (s.allocations - meanX) * (s.heap - meanY), 0) / samples.reduce((sum, s) => sum + (s.allocations - meanX) ** 2, 0);

console.log(
  JSON.stringify(
    {
      allocations: JOBS * PER_JOB,
      warmupAllocations: first.allocations,
      historySize: HISTORY,
      verdicts,
      heapAtWarmupBytes: first.heap,
      heapAtEndBytes: last.heap,
      heapEndVsWarmup: Number((last.heap / first.heap).toFixed(3)),
      growthBytesPerAllocationAfterWarmup: Number(slope.toFixed(2)),
      target: 'flat after warm-up: growth per allocation well under 1 byte (heapEndVsWarmup near 1)',
      samples,
    },
    null,
    2,
  ),
);
