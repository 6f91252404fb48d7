/**
 * The streams of bench/supervisor.ts, as the text Nomad 1.1.2 would send (every payload is one the
 * recorded many_allocs and failed_task scenarios hold, with its IDs, indexes and times rewritten):
 * one service job, its deployment, and `allocations` allocations of it, `batch` events a line.
 *
 * - placed: every allocation placed (PlanResult, pending, not yet reported by its client);
 * - running: each reported by its client, its task started (Received, Task Setup, Started);
 * - failing: each task failed (Terminated, then Not Restarting with FailsTask) before its
 *   min_healthy_time, so the verdict (unhealthy) is reached by the data itself, not by time;
 * - stuck: each reported with its task never started (Received, Task Setup): only its
 *   healthy_deadline decides it.
 *
 * Lines are built from templates filled by string concatenation, so even 100,000 allocations
 * (about 1.1 GB) are built in seconds.
 */
import { parseLossless, stringifyLossless, type LosslessJson } from '../src/testing/losslessJson.js';
import { isHeartbeatLine } from '../src/testing/recording.js';
import { recordedScenario } from './support/manyAllocs.js';

type Json = { [key: string]: LosslessJson };

export interface StreamPolicy {
  minHealthyTimeMs: number;
  healthyDeadlineMs: number;
}

export interface BenchStreams {
  /** Epoch ms of the stream's first event (the job's registration). */
  readonly start: number;
  /** Raft index of the first line. */
  readonly firstIndex: number;
  readonly jobId: string;
  /** The job, then the deployment and every allocation placed. */
  placed(): string[];
  /** Every allocation reported running. */
  running(): string[];
  /** Every allocation's task failed, `batch` a line. */
  failing(): string[];
  /** The failures of allocations `from` … `to - 1`, one allocation a line. */
  failingSingles(from: number, to: number): string[];
  /** Every allocation reported with its task never started. */
  stuck(): string[];
  /** The raft index the next line built gets. */
  readonly nextIndex: number;
}

export const allocId = (i: number): string => `${i.toString(16).padStart(8, '0')}-be7c-4000-8000-000000000000`;

/** Unix nanoseconds of an epoch-ms time, as Nomad writes them (digits, some sub-ms noise). */
const nanos = (ms: number, noise: number): string => `${Math.floor(ms)}${String(100_000 + (noise % 900_000)).padStart(6, '0')}`;
const rfc3339 = (ms: number, noise: number): string => new Date(ms).toISOString().replace('Z', `${String(noise % 1_000_000).padStart(6, '0')}Z`);

/**
 * Text with holes: `"#name#"` (quotes included) takes a bare value (a number), `@name@` a piece of a
 * string. Filled by concatenation, without serialising again.
 */
class TextTemplate {
  private readonly literals: string[] = [];
  private readonly holes: string[] = [];

  constructor(value: LosslessJson) {
    const parts = stringifyLossless(value).split(/"#(\w+)#"|@(\w+)@/);
    for (let i = 0; i < parts.length; i += 3) {
      this.literals.push(parts[i] as string);
      if (i + 1 < parts.length) this.holes.push((parts[i + 1] ?? parts[i + 2]) as string);
    }
  }

  fill(values: Readonly<Record<string, string | number>>): string {
    let text = this.literals[0] as string;
    for (let i = 0; i < this.holes.length; i++) {
      const value = values[this.holes[i] as string];
      if (value === undefined) throw new Error(`template hole ${this.holes[i]} not filled`);
      text += value + (this.literals[i + 1] as string);
    }
    return text;
  }
}

function scenarioAllocations(name: string): Json[] {
  return recordedScenario(name).stream
    .filter((line) => !isHeartbeatLine(line))
    .flatMap((line) => ((parseLossless(line.raw) as Json).Events as Json[] | null) ?? []);
}

function taskEventOf(events: Json[], type: string): Json {
  for (const event of events) {
    const states = ((event.Payload as Json).Allocation as Json | undefined)?.TaskStates as Record<string, Json> | null | undefined;
    for (const state of Object.values(states ?? {})) {
      const found = ((state.Events as Json[] | null) ?? []).find((taskEvent) => taskEvent.Type === type);
      if (found) return found;
    }
  }
  throw new Error(`no ${type} task event in the recordings`);
}

/**
 * The streams of one job with `allocations` allocations. `start` anchors every time in them (a
 * run on the system clock passes the time it starts at).
 */
export function benchStreams(allocations: number, batch: number, start: number, policy: StreamPolicy): BenchStreams {
  const recorded = scenarioAllocations('many_allocs');
  const failedTask = scenarioAllocations('failed_task');
  const find = (test: (event: Json) => boolean): Json => {
    const found = recorded.find(test);
    if (!found) throw new Error('template missing from the many_allocs recording');
    return found;
  };
  const allocOf = (event: Json): Json => (event.Payload as Json).Allocation as Json;
  const isAlloc = (status: string) => (event: Json) => event.Topic === 'Allocation' && allocOf(event)?.ClientStatus === status;
  const jobTemplate = (find((e) => e.Topic === 'Job' && e.Type === 'JobRegistered').Payload as Json).Job as Json;
  const deploymentTemplate = (find((e) => e.Topic === 'Deployment').Payload as Json).Deployment as Json;
  const pendingTemplate = allocOf(find(isAlloc('pending')));
  const runningTemplate = allocOf(find(isAlloc('running')));
  const mainState = (runningTemplate.TaskStates as Record<string, Json>).main as Json;
  const kept = (type: string): Json => ({ ...taskEventOf([find(isAlloc('running'))], type), Time: `#${type.replace(' ', '')}#` });
  const eventTemplates = {
    Received: kept('Received'),
    TaskSetup: kept('Task Setup'),
    Started: kept('Started'),
    Terminated: { ...taskEventOf(recorded, 'Terminated'), Time: '#Terminated#' },
    NotRestarting: { ...taskEventOf(failedTask, 'Not Restarting'), Time: '#NotRestarting#' },
  };

  const jobId = 'bench-allocs';
  const deploymentId = 'bench-0000-0000-0000-deployment0';
  const nanosOf = (ms: number): string => `${ms * 1_000_000}`;
  const group = (jobTemplate.TaskGroups as Json[])[0] as Json;
  const update = { ...(group.Update as Json), MinHealthyTime: `#minHealthy#`, HealthyDeadline: `#healthyDeadline#`, ProgressDeadline: `#progressDeadline#` };
  const jobText = new TextTemplate({
    Events: [{ Topic: 'Job', Type: 'JobRegistered', Key: jobId, Namespace: 'default', FilterKeys: null, Index: '#index#', Payload: { Job: {
      ...jobTemplate, ID: jobId, Name: jobId, JobModifyIndex: '#index#', ModifyIndex: '#index#', CreateIndex: '#index#', SubmitTime: '#submit#',
      TaskGroups: [{ ...group, Count: allocations, Update: update }],
    } } }],
    Index: '#index#',
  });
  const groups = deploymentTemplate.TaskGroups as Record<string, Json>;
  const deploymentText = new TextTemplate({
    Topic: 'Deployment', Type: 'PlanResult', Key: deploymentId, Namespace: 'default', FilterKeys: [jobId], Index: '#index#', Payload: { Deployment: {
      ...deploymentTemplate, ID: deploymentId, JobID: jobId, JobVersion: 0, JobModifyIndex: '#jobIndex#', JobCreateIndex: '#jobIndex#', CreateIndex: '#index#', ModifyIndex: '#index#',
      TaskGroups: { app: { ...groups.app, DesiredTotal: allocations } },
    } },
  });
  // Every allocation copy: its identity, indexes and times are holes; the task states one of the kinds below.
  const allocationText = (template: Json, type: string, clientStatus: string, taskStates: LosslessJson): TextTemplate => {
    const { DeploymentStatus: _nomadsVerdict, ...rest } = template;
    return new TextTemplate({
      Topic: 'Allocation', Type: type, Key: '@id@', Namespace: 'default', FilterKeys: [jobId, deploymentId], Index: '#index#',
      Payload: { Allocation: {
        ...rest, ID: '@id@', Name: `${jobId}.app[@n@]`, JobID: jobId, DeploymentID: deploymentId, ClientStatus: clientStatus,
        CreateIndex: '#created#', AllocModifyIndex: '#created#', ModifyIndex: '#index#', CreateTime: '#createTime#', ModifyTime: '#modifyTime#',
        TaskStates: taskStates,
      } },
    });
  };
  const taskState = (state: string, failed: boolean, events: Json[], finished: boolean): Json => ({
    ...mainState, State: state, Failed: failed, Restarts: 0, LastRestart: null,
    StartedAt: state === 'pending' ? null : '@startedAt@', FinishedAt: finished ? '@finishedAt@' : null, Events: events,
  });
  const { Received, TaskSetup, Started, Terminated, NotRestarting } = eventTemplates;
  const placedText = allocationText(pendingTemplate, 'PlanResult', 'pending', null);
  const runningText = allocationText(runningTemplate, 'AllocationUpdated', 'running', { main: taskState('running', false, [Received, TaskSetup, Started], false) });
  const failingText = allocationText(runningTemplate, 'AllocationUpdated', 'failed', { main: taskState('dead', true, [Received, TaskSetup, Started, Terminated, NotRestarting], true) });
  const stuckText = allocationText(runningTemplate, 'AllocationUpdated', 'pending', { main: taskState('pending', false, [Received, TaskSetup], false) });

  const firstIndex = 1_000;
  let index = firstIndex;
  const placedAt = start + 100;
  /** Allocation i's task: received 1 s after the start (10 ms later per batch), started 500 ms later, failed 300 ms after that. */
  const times = (i: number) => {
    const received = start + 1_000 + Math.floor(i / batch) * 10;
    return { received, setup: received + 20, started: received + 500, terminated: received + 800, finished: received + 801 };
  };
  const fill = (template: TextTemplate, i: number, created: number): string => {
    const t = times(i);
    return template.fill({
      id: allocId(i), n: i, index, created, createTime: nanosOf(placedAt), modifyTime: nanos(t.received, i),
      Received: nanos(t.received, i), TaskSetup: nanos(t.setup, i + 1), Started: nanos(t.started, i + 2), Terminated: nanos(t.terminated, i + 3), NotRestarting: nanos(t.finished, i + 4),
      startedAt: rfc3339(t.started, i + 2), finishedAt: rfc3339(t.finished, i + 4),
    });
  };
  // Every allocation is created at the index of its placement line.
  const createdAt = (i: number): number => firstIndex + 1 + Math.floor(i / batch);
  const lines = (template: TextTemplate, from: number, to: number, size: number, head?: (first: number) => string): string[] => {
    const out: string[] = [];
    for (let first = from; first < to; first += size, index++) {
      const events: string[] = head === undefined ? [] : [head(first)].filter((text) => text !== '');
      for (let i = first; i < Math.min(to, first + size); i++) events.push(fill(template, i, createdAt(i)));
      out.push(`{"Events":[${events.join(',')}],"Index":${index}}`);
    }
    return out;
  };
  return {
    start,
    firstIndex,
    jobId,
    get nextIndex() {
      return index;
    },
    placed() {
      const job = jobText.fill({ index, submit: nanosOf(start), minHealthy: nanosOf(policy.minHealthyTimeMs), healthyDeadline: nanosOf(policy.healthyDeadlineMs), progressDeadline: nanosOf(policy.healthyDeadlineMs * 2) });
      const jobIndex = index++;
      return [job, ...lines(placedText, 0, allocations, batch, (first) => (first === 0 ? deploymentText.fill({ index, jobIndex }) : ''))];
    },
    running: () => lines(runningText, 0, allocations, batch),
    failing: () => lines(failingText, 0, allocations, batch),
    failingSingles: (from, to) => lines(failingText, from, to, 1),
    stuck: () => lines(stuckText, 0, allocations, batch),
  };
}
