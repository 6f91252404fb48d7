/**
 * The stream of bench/supervisor.ts: one job, one deployment, `allocations` allocations placed
 * (all at t=1) and then running (one batch every 10 ms from t=10 s), built from the payloads
 * Nomad 1.1.2 sent in the recorded many_allocs scenario. Each running update carries a StartedAt
 * 2 s in the past, so with min_healthy_time 1 s the update itself completes health.
 */
import { parseLossless, stringifyLossless } from '../src/testing/losslessJson.js';
import { isHeartbeatLine, type RecordedLine } from '../src/testing/recording.js';
import { manyAllocs } from './support/manyAllocs.js';

type Json = Record<string, unknown>;
export interface BenchEvent {
  Topic: string;
  Type: string;
  Key: string;
  Namespace: string;
  FilterKeys: string[];
  Index: number;
  Payload: Json;
}

export interface BenchStream {
  lines: RecordedLine[];
  /** Events across all lines. */
  events: number;
  /** Lines up to and including the last placement batch. */
  placementLines: number;
  /** Clock time of the recording the stream is set in (epoch ms). */
  start: number;
  /** t of the first running batch; batch k follows at RUNNING_AT + 10 k. */
  runningAt: number;
  jobId: string;
}

const RUNNING_AT = 10_000;

export function benchStream(allocations: number, batchSize: number): BenchStream {
  const scenario = manyAllocs();
  const recorded = scenario.stream
    .filter((line) => !isHeartbeatLine(line))
    .flatMap((line) => (parseLossless(line.raw) as unknown as { Events: BenchEvent[] }).Events);
  const find = (test: (event: BenchEvent) => boolean): BenchEvent => {
    const event = recorded.find(test);
    if (!event) throw new Error('template missing from the many_allocs recording');
    return event;
  };
  const allocOf = (event: BenchEvent): Json => event.Payload.Allocation as Json;
  const jobTemplate = find((e) => e.Topic === 'Job' && e.Type === 'JobRegistered').Payload.Job as Json;
  const deploymentTemplate = find((e) => e.Topic === 'Deployment').Payload.Deployment as Json;
  const pendingTemplate = allocOf(find((e) => e.Topic === 'Allocation' && allocOf(e).ClientStatus === 'pending'));
  const runningTemplate = allocOf(find((e) => e.Topic === 'Allocation' && allocOf(e).ClientStatus === 'running'));

  const start = Date.parse(scenario.meta.stream_opened_at);
  const jobId = 'bench-allocs';
  const deploymentId = 'bench-0000-0000-0000-deployment0';
  const allocId = (i: number): string => `${i.toString(16).padStart(8, '0')}-bench-4000-8000-000000000000`;
  let index = 1_000;
  const lines: RecordedLine[] = [];
  let events = 0;
  const push = (t: number, batch: BenchEvent[]): void => {
    lines.push({ t, raw: stringifyLossless({ Events: batch, Index: index }) });
    events += batch.length;
  };
  const event = (Topic: string, Type: string, Key: string, FilterKeys: string[], Payload: Json): BenchEvent => ({
    Topic, Type, Key, Namespace: 'default', FilterKeys, Index: index, Payload,
  });
  const group = (jobTemplate.TaskGroups as Json[])[0]!;
  const job = { ...jobTemplate, ID: jobId, Name: jobId, JobModifyIndex: index, ModifyIndex: index, CreateIndex: index, TaskGroups: [{ ...group, Count: allocations }] };
  push(0, [event('Job', 'JobRegistered', jobId, [], { Job: job })]);
  index++;
  const groups = deploymentTemplate.TaskGroups as Record<string, Json>;
  const deployment = { ...deploymentTemplate, ID: deploymentId, JobID: jobId, JobVersion: 0, TaskGroups: { app: { ...groups.app, DesiredTotal: allocations } } };
  for (let first = 0; first < allocations; first += batchSize, index++) {
    const batch: BenchEvent[] = first === 0 ? [event('Deployment', 'PlanResult', deploymentId, [jobId], { Deployment: deployment })] : [];
    for (let i = first; i < Math.min(allocations, first + batchSize); i++) {
      const alloc = { ...pendingTemplate, ID: allocId(i), Name: `${jobId}.app[${i}]`, JobID: jobId, DeploymentID: deploymentId, CreateIndex: index, ModifyIndex: index, AllocModifyIndex: index };
      batch.push(event('Allocation', 'PlanResult', allocId(i), [jobId, deploymentId], { Allocation: alloc }));
    }
    push(1, batch);
  }
  const placementLines = lines.length;
  const mainState = (runningTemplate.TaskStates as Record<string, Json>).main!;
  for (let first = 0, k = 0; first < allocations; first += batchSize, index++, k++) {
    const t = RUNNING_AT + k * 10;
    const taskStates = { main: { ...mainState, State: 'running', StartedAt: new Date(start + t - 2_000).toISOString() } };
    const batch: BenchEvent[] = [];
    for (let i = first; i < Math.min(allocations, first + batchSize); i++) {
      const alloc = { ...runningTemplate, ID: allocId(i), Name: `${jobId}.app[${i}]`, JobID: jobId, DeploymentID: deploymentId, ModifyIndex: index, TaskStates: taskStates };
      batch.push(event('Allocation', 'AllocationUpdated', allocId(i), [jobId, deploymentId], { Allocation: alloc }));
    }
    push(t, batch);
  }
  return { lines, events, placementLines, start, runningAt: RUNNING_AT, jobId };
}
