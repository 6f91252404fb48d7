import { join } from 'node:path';
import { VirtualClock } from '../clock/index.js';
import { NomadClient } from '../nomad/client.js';
import type { Evaluation } from '../nomad/types.js';
import { createSupervisor, type DeploymentResult } from '../supervisor/index.js';
import { describeChange, describeDeployment, describeEvaluation, describeVerdict, paint, type DescribeOptions } from '../supervisor/describe.js';
import { FakeNomad } from '../testing/fakeNomad.js';
import { QuietDriver, WireTally } from '../testing/quiet.js';
import { interruptSignal, useColor } from './commandIo.js';
import { runPoolDemo } from './poolDemo.js';
import { startInspector } from '../inspect/inspector.js';
import { parseLossless } from '../testing/losslessJson.js';
import type { StreamEvent } from '../testing/nomad/eventBroker.js';
import { isHeartbeatLine, readScenario, requestedIndex, type Scenario } from '../testing/recording.js';

/**
 * `warden demo` (`npm start`): a FakeNomad on loopback replays three deployments recorded from a
 * real Nomad 1.1.2 agent, with Nomad's own health verdicts removed, while a supervisor follows it
 * over the real event stream and prints what it concludes. Runs at the recorded pace (`--speed`
 * multiplies it). The scenarios run in the order they were recorded, on one clock that reads the
 * recording's own times, so every timestamp printed is the one Nomad's payloads carry.
 *
 * Deterministic: the demo drives its clock itself, from one due timer to the next, and moves it
 * only once the fake and the supervisor's client are quiet (src/testing/quiet.ts); real time only
 * paces the steps. The lines one instant produces are printed in a fixed order (state changes, then
 * verdicts, evaluations, deployments), so the same recording gives the same output every time, on
 * a loaded machine too; and every wait has a bound in virtual time, so it always ends.
 */

interface DemoScenario {
  name: string;
  title: string;
  blurb: string;
}

const DEMO_SCENARIOS: readonly DemoScenario[] = [
  {
    name: 'failed_task',
    title: 'A task that fails at once',
    blurb: 'restart { attempts = 0 }, and the command exits 1: the allocation is unhealthy the moment the task fails.',
  },
  {
    name: 'placement_failure',
    title: 'A job that cannot be placed',
    blurb: 'memory = 1000000 MB: the scheduler finds no room, and the evaluation says why.',
  },
  {
    name: 'rolling_update',
    title: 'A rolling update, one allocation at a time',
    blurb: 'count = 3, max_parallel = 1: each new allocation must stay running for min_healthy_time (2s) before the next.',
  },
];

export interface DemoIo {
  write(line: string): void;
  /** The demo's clock; it starts at the first recording's time. */
  clock: VirtualClock;
  /** Folder holding the recorded scenarios (…/nomad-1.1.2/scenarios). */
  recordingsDir: string;
  color?: boolean;
  /** Start the inspector on this port (0: any free one); undefined: no inspector. */
  inspectPort?: number;
  /** Then show runner pools (src/cli/poolDemo.ts): real commands in runners, on the demo's clock. */
  pools?: boolean;
  /** With the inspector on: keep it open after the last scenario until this resolves. */
  linger?: () => Promise<void>;
  /** Called before each step of virtual time with its length: the command line sleeps it (scaled); tests do not. */
  pace?: (virtualMs: number) => Promise<void>;
}

/** Kinds of lines, in the order one instant prints them. */
const LINE_ORDER = { change: 0, verdict: 1, evaluation: 2, deployment: 3 } as const;
type LineKind = keyof typeof LINE_ORDER;

/** How long a scenario may take in virtual time before the demo moves on (a recording lasts well under a minute). */
const SCENARIO_BUDGET_MS = 300_000;

/** Nomad's own answer removed from the replay: no DeploymentStatus, no "Alloc Unhealthy" event. */
export function withoutNomadVerdict(event: StreamEvent): StreamEvent {
  const allocation = (event.Payload as { Allocation?: Record<string, unknown> }).Allocation;
  if (event.Topic !== 'Allocation' || !allocation) return event;
  const { DeploymentStatus: _verdict, ...rest } = allocation;
  const states = (rest.TaskStates ?? {}) as Record<string, { Events?: { Type: string }[] | null }>;
  const TaskStates = Object.fromEntries(
    Object.entries(states).map(([task, state]) => [task, { ...state, Events: (state.Events ?? []).filter((e) => e.Type !== 'Alloc Unhealthy') }]),
  );
  return { ...event, Payload: { ...event.Payload, Allocation: { ...rest, TaskStates } } };
}

/** The job's registration evaluations in the recording, with the time each first appears. */
function registrationEvaluations(scenario: Scenario): { id: string; t: number }[] {
  const found = new Map<string, number>();
  for (const line of scenario.stream) {
    if (isHeartbeatLine(line)) continue;
    const batch = parseLossless(line.raw) as unknown as { Events?: { Payload: { Evaluation?: Evaluation } }[] };
    for (const event of batch.Events ?? []) {
      const evaluation = event.Payload.Evaluation;
      if (evaluation?.JobID === scenario.meta.job_id && evaluation.TriggeredBy === 'job-register' && !found.has(evaluation.ID)) {
        found.set(evaluation.ID, line.t);
      }
    }
  }
  return [...found].map(([id, t]) => ({ id, t }));
}

function jobVersions(scenario: Scenario): number[] {
  return [scenario.job, scenario.jobV1].flatMap((job) => {
    const version = (job as { Version?: unknown } | undefined)?.Version;
    return typeof version === 'number' ? [version] : [];
  });
}

export async function runDemo(io: DemoIo): Promise<void> {
  const { clock } = io;
  const style: DescribeOptions = { color: io.color ?? false, shortTime: true };
  const fake = await FakeNomad.start({ clock });
  const tally = new WireTally();
  const driver = new QuietDriver(clock);
  driver.add({ server: fake.activity, client: tally });
  const nomad = new NomadClient({ address: fake.address }, { clock, gzip: false, wire: tally.layer });
  const inspector = io.inspectPort === undefined ? undefined : await startInspector({ clock, port: io.inspectPort });
  const supervisor = createSupervisor({ nomad, clock, ...(inspector ? { inspect: inspector.inspect } : {}) });
  inspector?.attach(supervisor);
  let jobId = '';
  // What one instant printed, put in a fixed order when time next moves.
  let pending: { kind: LineKind; at: number; text: string }[] = [];
  const print = (kind: LineKind, at: number, text: string): void => {
    pending.push({ kind, at, text });
  };
  const flush = (): void => {
    const lines = pending.sort((a, b) => LINE_ORDER[a.kind] - LINE_ORDER[b.kind] || a.at - b.at);
    pending = [];
    for (const line of lines) io.write(line.text);
  };
  /** Drives the clock until `done` settles or `budgetMs` of virtual time have passed; the lines come out step by step. */
  const drive = async (done: Promise<unknown>, budgetMs: number): Promise<void> => {
    let settled = false;
    done.then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    const until = clock.now() + budgetMs;
    for (;;) {
      await driver.quiet();
      flush();
      if (settled || clock.now() >= until) return;
      const due = clock.nextDue();
      const next = due === undefined ? until : Math.min(until, Math.max(due, clock.now()));
      await io.pace?.(next - clock.now());
      clock.advanceTo(next);
    }
  };
  // A move into a final state is followed by its verdict line, which says more.
  const FINAL = new Set(['healthy', 'unhealthy', 'stopped']);
  supervisor.changes$.subscribe((change) => {
    if (change.alloc.jobId === jobId && !FINAL.has(change.to)) print('change', change.at, `  ${describeChange(change, style)}`);
  });
  supervisor.verdicts$.subscribe((record) => {
    if (record.alloc.jobId === jobId) print('verdict', record.outcome.at, `  ${describeVerdict(record, style)}`);
  });
  io.write(paint('Warden demo', 'bold', style));
  io.write(`  A FakeNomad on ${fake.address} replays ${DEMO_SCENARIOS.length} deployments recorded from a real Nomad 1.1.2 agent,`);
  io.write("  with Nomad's own health verdicts removed: every verdict below is Warden's, reached live from the event stream.");
  if (inspector) io.write(`  Inspector (live state charts and reasons): ${paint(inspector.url, 'note', style)}`);
  try {
    for (const [i, demo] of DEMO_SCENARIOS.entries()) {
      const scenario = readScenario(join(io.recordingsDir, demo.name));
      await drive(new Promise(() => undefined), Math.max(0, Date.parse(scenario.meta.stream_opened_at) - clock.now()));
      jobId = scenario.meta.job_id;
      io.write('');
      io.write(`${paint(`▶ ${i + 1}/${DEMO_SCENARIOS.length}  ${demo.title}`, 'bold', style)}  ${paint(`(job ${jobId})`, 'dim', style)}`);
      io.write(`  ${paint(demo.blurb, 'dim', style)}`);
      await followScenario(scenario);
    }
    if (io.pools === true) await drive(runPoolDemo({ clock, driver, write: io.write, style, ...(inspector ? { model: inspector.model } : {}) }), SCENARIO_BUDGET_MS);
    io.write('');
    io.write(`${paint('Done.', 'bold', style)} On a cluster of yours: ${paint('warden watch', 'note', style)} follows every allocation,`);
    io.write(`${paint('warden gate <job>', 'note', style)} waits for a deployment (exit 0 healthy, 1 not, 2 Nomad unreachable, 3 canaries awaiting promotion).`);
    if (inspector && io.linger) {
      io.write(`The inspector stays open at ${paint(inspector.url, 'note', style)}: Ctrl-C to end.`);
      await io.linger();
    }
  } finally {
    await supervisor.stop();
    await inspector?.close();
    await nomad.close();
    await fake.close();
  }

  async function followScenario(scenario: Scenario): Promise<void> {
    const start = clock.now();
    const deployments = jobVersions(scenario).map((version) =>
      supervisor.waitForDeployment(scenario.meta.job_id, { version, namespace: 'default' }).then((result: DeploymentResult) => {
        // A placement failure's details come with its evaluation, just below.
        const lines = describeDeployment(result, style);
        for (const text of !result.ok && result.evaluation ? lines.slice(0, 1) : lines) print('deployment', clock.now(), `  ${text}`);
      }),
    );
    const evaluations = registrationEvaluations(scenario).map(
      ({ id, t }) =>
        new Promise<void>((done) => {
          // Asked once Nomad has published it, as `nomad job run` does right after registering.
          clock.setTimeout(() => {
            void supervisor.monitorEvaluation(id).then((outcome) => {
              for (const text of describeEvaluation(outcome, style)) print('evaluation', clock.now(), `  ${text}`);
              done();
            }, done);
          }, start + t - clock.now());
        }),
    );
    const replay = fake.replay(scenario.stream, { transform: withoutNomadVerdict, fromIndex: requestedIndex(scenario) });
    await drive(Promise.all([...deployments, ...evaluations]), SCENARIO_BUDGET_MS);
    replay.stop();
    // A moment to read before the next one.
    await drive(new Promise(() => undefined), 1_500);
  }
}

/** Sleeps a step of virtual time in real time, at `speed` × (a step is at most a second of waiting). */
function pace(speed: number): (virtualMs: number) => Promise<void> {
  return (virtualMs) => new Promise((resolve) => setTimeout(resolve, Math.min(1_000, virtualMs / speed)));
}

/** Ctrl-C ends the wait (and only this wait: until then Ctrl-C ends the demo as usual). */
function untilInterrupted(): Promise<void> {
  const signal = interruptSignal();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}


/** `warden demo` run from the command line (its options as commandLine/demo.ts parses them). */
export async function demoAction(options: { speed: number; recordings: string; inspect: boolean; inspectPort: number }): Promise<void> {
  const first = readScenario(join(options.recordings, DEMO_SCENARIOS[0]!.name));
  const clock = new VirtualClock({ start: Date.parse(first.meta.stream_opened_at) });
  await runDemo({
    clock,
    recordingsDir: options.recordings,
    write: (text) => process.stdout.write(`${text}\n`),
    color: useColor(process.stdout, process.env),
    pools: true,
    pace: pace(options.speed),
    ...(options.inspect ? { inspectPort: options.inspectPort, linger: untilInterrupted } : {}),
  });
}
