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
 * - cluster: the same allocations as a busy cluster sends them (several jobs, each with its
 *   evaluation and deployment; placements, starts and failures interleaved, 1–200 events a line).
 *
 * Lines are built from templates filled by string concatenation, so even 100,000 allocations
 * (about 1.1 GB) are built in seconds.
 */
import { seededRandom } from '../src/random.js';
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
  /** A busy cluster's stream of the same allocations: every one placed, running, then failing (see benchStreams). */
  cluster(): string[];
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


/** The cluster stream's batches: 1 to this many events a line. */
export const CLUSTER_MAX_BATCH = 200;
/** Jobs in the cluster stream, each with its own deployment and evaluation. */
export const CLUSTER_JOBS = 8;

/**
 * The streams of `allocations` allocations. `start` anchors every time in them (a run on the system
 * clock passes the time it starts at).
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
  const evaluationTemplate = (find((e) => e.Topic === 'Evaluation' && e.Type === 'EvaluationUpdated').Payload as Json).Evaluation as Json;
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
  const deploymentOf = (job: number): string => `bench-0000-0000-0000-deployment${job}`;
  const evaluationOf = (job: number): string => `bench-0000-0000-0000-evaluation${job}`;
  const nanosOf = (ms: number): string => `${ms * 1_000_000}`;
  const group = (jobTemplate.TaskGroups as Json[])[0] as Json;
  const update = { ...(group.Update as Json), MinHealthyTime: `#minHealthy#`, HealthyDeadline: `#healthyDeadline#`, ProgressDeadline: `#progressDeadline#` };
  const jobEvent = {
    Topic: 'Job', Type: 'JobRegistered', Key: '@job@', Namespace: 'default', FilterKeys: null, Index: '#index#', Payload: { Job: {
      ...jobTemplate, ID: '@job@', Name: '@job@', JobModifyIndex: '#index#', ModifyIndex: '#index#', CreateIndex: '#index#', SubmitTime: '#submit#',
      TaskGroups: [{ ...group, Count: '#count#', Update: update }],
    } },
  };
  const jobText = new TextTemplate(jobEvent);
  const groups = deploymentTemplate.TaskGroups as Record<string, Json>;
  const deploymentText = (type: string): TextTemplate => new TextTemplate({
    Topic: 'Deployment', Type: type, Key: '@deployment@', Namespace: 'default', FilterKeys: ['@job@'], Index: '#index#', Payload: { Deployment: {
      ...deploymentTemplate, ID: '@deployment@', JobID: '@job@', JobVersion: 0, JobModifyIndex: '#jobIndex#', JobCreateIndex: '#jobIndex#', CreateIndex: '#created#', ModifyIndex: '#index#',
      TaskGroups: { app: { ...groups.app, DesiredTotal: '#count#', PlacedAllocs: '#placed#', UnhealthyAllocs: '#unhealthy#' } },
    } },
  });
  const deploymentPlaced = deploymentText('PlanResult');
  const deploymentUpdated = deploymentText('AllocationUpdated');
  const evaluationText = (type: string, status: string): TextTemplate => new TextTemplate({
    Topic: 'Evaluation', Type: type, Key: '@evaluation@', Namespace: 'default', FilterKeys: ['@job@'], Index: '#index#', Payload: { Evaluation: {
      ...evaluationTemplate, ID: '@evaluation@', JobID: '@job@', DeploymentID: '@deployment@', Status: status, JobModifyIndex: '#jobIndex#', CreateIndex: '#jobIndex#', ModifyIndex: '#index#',
      SnapshotIndex: '#jobIndex#', CreateTime: '#submit#', ModifyTime: '#submit#',
    } },
  });
  const evaluationRegistered = evaluationText('JobRegistered', 'pending');
  const evaluationPlanned = evaluationText('PlanResult', 'pending');
  const evaluationComplete = evaluationText('EvaluationUpdated', 'complete');
  // Every allocation copy: its identity, job, indexes and times are holes; the task states one of the kinds below.
  const allocationText = (template: Json, type: string, clientStatus: string, taskStates: LosslessJson): TextTemplate => {
    const { DeploymentStatus: _nomadsVerdict, ...rest } = template;
    return new TextTemplate({
      Topic: 'Allocation', Type: type, Key: '@id@', Namespace: 'default', FilterKeys: ['@job@', '@deployment@'], Index: '#index#',
      Payload: { Allocation: {
        ...rest, ID: '@id@', Name: '@job@.app[@n@]', JobID: '@job@', DeploymentID: '@deployment@', EvalID: '@evaluation@', ClientStatus: clientStatus,
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
  /** Allocation i's task: received 1 s after the start (10 ms later per `batch` allocations), started 500 ms later, failed 300 ms after that. */
  const times = (i: number) => {
    const received = start + 1_000 + Math.floor(i / batch) * 10;
    return { received, setup: received + 20, started: received + 500, terminated: received + 800, finished: received + 801 };
  };
  /** The job allocation i belongs to, and its position in that job's group. */
  interface Member { job: string; deployment: string; evaluation: string; n: number }
  const fill = (template: TextTemplate, i: number, created: number, member: Member): string => {
    const t = times(i);
    return template.fill({
      id: allocId(i), n: member.n, job: member.job, deployment: member.deployment, evaluation: member.evaluation, index, created, createTime: nanosOf(placedAt), modifyTime: nanos(t.received, i),
      Received: nanos(t.received, i), TaskSetup: nanos(t.setup, i + 1), Started: nanos(t.started, i + 2), Terminated: nanos(t.terminated, i + 3), NotRestarting: nanos(t.finished, i + 4),
      startedAt: rfc3339(t.started, i + 2), finishedAt: rfc3339(t.finished, i + 4),
    });
  };
  const line = (events: readonly string[]): string => `{"Events":[${events.join(',')}],"Index":${index++}}`;
  const jobFields = (job: string, count: number) => ({
    job, count, index, submit: nanosOf(start), minHealthy: nanosOf(policy.minHealthyTimeMs), healthyDeadline: nanosOf(policy.healthyDeadlineMs), progressDeadline: nanosOf(policy.healthyDeadlineMs * 2),
  });

  // ---- one job, batches of `batch`: every allocation placed, then every one running, then every one failing ----
  const single: Member = { job: jobId, deployment: deploymentOf(0), evaluation: evaluationOf(0), n: 0 };
  const memberOf = (i: number): Member => ({ ...single, n: i });
  // Every allocation is created at the index of its placement line.
  const createdAt = (i: number): number => firstIndex + 1 + Math.floor(i / batch);
  const lines = (template: TextTemplate, from: number, to: number, size: number, head?: (first: number) => string): string[] => {
    const out: string[] = [];
    for (let first = from; first < to; first += size) {
      const events: string[] = head === undefined ? [] : [head(first)].filter((text) => text !== '');
      for (let i = first; i < Math.min(to, first + size); i++) events.push(fill(template, i, createdAt(i), memberOf(i)));
      out.push(line(events));
    }
    return out;
  };

  /**
   * A busy cluster: CLUSTER_JOBS jobs registered one after another, each placing its share of the
   * allocations in plans of up to CLUSTER_MAX_BATCH (with its evaluation and deployment), while the
   * clients report the allocations already placed running and those already running failed, in
   * batches of 1–CLUSTER_MAX_BATCH allocation updates that mix allocations of every job; each failing
   * batch also carries the deployments it moved. Seeded: the same bytes in every run. As in Nomad, a batch
   * holds one update of an allocation at most.
   */
  const cluster = (): string[] => {
    const random = seededRandom(22);
    // Log-uniform: as many batches of 1–2 events as of 100–200, as a cluster's clients, each syncing
    // its own few allocations, and the schedulers' larger plans make them (median about 14).
    const size = (): number => Math.floor(CLUSTER_MAX_BATCH ** random()) + (random() < 0.5 ? 0 : 1);
    const perJob = Math.ceil(allocations / CLUSTER_JOBS);
    const jobs = Array.from({ length: Math.ceil(allocations / perJob) }, (_, j) => ({
      member: { job: `bench-cluster-${j}`, deployment: deploymentOf(j), evaluation: evaluationOf(j), n: 0 },
      first: j * perJob,
      count: Math.min(perJob, allocations - j * perJob),
      jobIndex: 0,
      deploymentIndex: 0,
      placed: 0,
      unhealthy: 0,
    }));
    const jobOfAlloc = (i: number) => jobs[Math.floor(i / perJob)] as (typeof jobs)[number];
    const created = new Int32Array(allocations);
    const out: string[] = [];
    // Placed and not yet running; running and not yet failed: a batch takes from what earlier batches left.
    const startable: number[] = [];
    const failable: number[] = [];
    let nextJob = 0;
    /** Removes a random element (order does not matter to these pools). */
    const take = (pool: number[]): number => {
      const at = Math.floor(random() * pool.length);
      const value = pool[at] as number;
      pool[at] = pool[pool.length - 1] as number;
      pool.pop();
      return value;
    };
    let failed = 0;
    while (failed < allocations) {
      const placing = jobs[nextJob];
      const updates = startable.length + failable.length;
      if (placing !== undefined && (updates === 0 || random() < 0.25)) {
        const fields = { ...placing.member, count: placing.count };
        if (placing.placed === 0) {
          placing.jobIndex = index;
          out.push(line([jobText.fill(jobFields(placing.member.job, placing.count)), evaluationRegistered.fill({ ...fields, index, jobIndex: index, submit: nanosOf(start) })]));
        }
        const events: string[] = [];
        if (placing.placed === 0) {
          placing.deploymentIndex = index;
          events.push(evaluationPlanned.fill({ ...fields, index, jobIndex: placing.jobIndex, submit: nanosOf(start) }));
        }
        const from = placing.first + placing.placed;
        const to = Math.min(placing.first + placing.count, from + size());
        placing.placed += to - from;
        events.push(deploymentPlaced.fill({ ...fields, index, jobIndex: placing.jobIndex, created: placing.deploymentIndex, placed: placing.placed, unhealthy: 0 }));
        for (let i = from; i < to; i++) {
          created[i] = index;
          events.push(fill(placedText, i, index, { ...placing.member, n: i - placing.first }));
        }
        const newlyPlaced = Array.from({ length: to - from }, (_, k) => from + k);
        if (placing.placed === placing.count) {
          events.push(evaluationComplete.fill({ ...fields, index, jobIndex: placing.jobIndex, submit: nanosOf(start) }));
          nextJob++;
        }
        out.push(line(events));
        startable.push(...newlyPlaced);
        continue;
      }
      const events: string[] = [];
      const started: number[] = [];
      const moved = new Set<(typeof jobs)[number]>();
      const wanted = Math.min(size(), updates);
      for (let k = 0; k < wanted; k++) {
        const failing = failable.length > 0 && (startable.length === 0 || random() < failable.length / (startable.length + failable.length));
        const i = take(failing ? failable : startable);
        const job = jobOfAlloc(i);
        const member = { ...job.member, n: i - job.first };
        if (failing) {
          events.push(fill(failingText, i, created[i] as number, member));
          job.unhealthy++;
          moved.add(job);
          failed++;
        } else {
          events.push(fill(runningText, i, created[i] as number, member));
          started.push(i);
        }
      }
      for (const job of moved) events.push(deploymentUpdated.fill({ ...job.member, count: job.count, index, jobIndex: job.jobIndex, created: job.deploymentIndex, placed: job.placed, unhealthy: job.unhealthy }));
      out.push(line(events));
      // Only now: an allocation started in this batch fails in a later one.
      failable.push(...started);
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
      const jobIndex = index;
      const job = jobText.fill(jobFields(jobId, allocations));
      const head = `{"Events":[${job}],"Index":${index++}}`;
      return [head, ...lines(placedText, 0, allocations, batch, (first) => (first === 0 ? deploymentPlaced.fill({ ...single, count: allocations, index, jobIndex, created: index, placed: allocations, unhealthy: 0 }) : ''))];
    },
    running: () => lines(runningText, 0, allocations, batch),
    failing: () => lines(failingText, 0, allocations, batch),
    failingSingles: (from, to) => lines(failingText, from, to, 1),
    stuck: () => lines(stuckText, 0, allocations, batch),
    cluster,
  };
}
