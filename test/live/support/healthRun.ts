/**
 * One live health run: scenarios deployed on the real agent side by side, Warden judging them every
 * way a user runs it — a watch from the start (recorded with `warden record`), a watch started after
 * Nomad decided, a watch restarted mid-deployment, a gate in flight and a gate started after Nomad
 * finished — and each verdict, its time and its reasons compared with Nomad's own (see
 * nomadVerdicts.ts). Delays are measured from Nomad's own updates reaching the stream (the observer,
 * in this process) to Warden's printed lines, and recorded as figures of the live tier.
 */
import { nomadRulesFor, type NomadRules } from '../../../machines/nomadRules.js';
import { readClusterVersion } from '../../../src/nomad/clusterVersion.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gate } from '../../../src/cli/gateCommand.js';
import { replay } from '../../../src/cli/recordCommands.js';
import { withRecording } from '../../../src/cli/recording.js';
import { watch, type WatchOptions } from '../../../src/cli/watchCommand.js';
import { systemClock } from '../../../src/clock/index.js';
import type { NomadClient } from '../../../src/nomad/client.js';
import type { Allocation, Job } from '../../../src/nomad/types.js';
import type { LogSink } from '../../../src/logger.js';
import { Conditions } from './conditions.js';
import { recordFigure } from './figures.js';
import { deploymentSettled, HealthObserver, type ObservedDeployment } from './healthObserver.js';
import { jobName, LIVE_SCENARIOS, type LiveScenario } from './healthScenarios.js';
import { writeLiveFixture } from './liveFixtures.js';
import { compare, expectationFor, policyOf, unrecordedFailure, unrecordedStop, type Expectation, type Tolerance, type WardenVerdict } from './nomadVerdicts.js';
import { liveEnv, uniqueJobId } from './live.js';

export const MODES = ['watch from the start', 'watch started late', 'watch restarted mid-deployment', 'gate in flight', 'gate started late'] as const;
export type Mode = (typeof MODES)[number];

interface Printed {
  readonly line: string;
  /** When it was written, on this process's clock. */
  readonly at: number;
}

/** A logger that keeps warnings and errors as lines. */
function collectingLogger(into: string[]): LogSink {
  const keep = (fields: object, message: string): void => void into.push(`${message} ${JSON.stringify(fields)}`);
  return { debug: () => undefined, info: () => undefined, warn: keep, error: keep };
}

/** A verdict line of `warden watch --json`. */
export interface PrintedVerdict extends WardenVerdict {
  readonly allocId: string;
  readonly printedAt: number;
}

/** `warden watch --json` run in this process, its lines timed as they are written. */
export class WatchRun {
  readonly lines: Printed[] = [];
  /** Problems it printed (stderr). */
  readonly problems: string[] = [];
  /** Warnings and errors it logged (reconnects, retried reads). */
  readonly warnings: string[] = [];
  readonly startedAt = systemClock.now();
  private readonly stopper = new AbortController();
  private readonly conditions = new Conditions();
  readonly done: Promise<number>;

  constructor(options: WatchOptions, record?: string) {
    const logger = collectingLogger(this.warnings);
    const io = {
      env: liveEnv(),
      write: (line: string) => {
        this.lines.push({ line, at: systemClock.now() });
        this.conditions.notify();
      },
      error: (line: string) => this.problems.push(line),
      signal: this.stopper.signal,
      logger,
    };
    const command = { ...options, json: true };
    this.done =
      record === undefined
        ? watch(command, io)
        : withRecording(record, { name: 'watch', options: { ...(options.job ? { job: options.job } : {}) } }, io, (recording) => watch(command, recording));
  }

  verdicts(): PrintedVerdict[] {
    return this.lines.flatMap(({ line, at }) => {
      const parsed = JSON.parse(line) as { type: string; verdict?: PrintedVerdict['verdict']; allocId: string; time: string; reasons?: Record<string, string>; basis?: string };
      if (parsed.type !== 'verdict' || parsed.verdict === undefined) return [];
      return [{ allocId: parsed.allocId, verdict: parsed.verdict, at: Date.parse(parsed.time), printedAt: at, ...(parsed.reasons ? { reasons: parsed.reasons } : {}), ...(parsed.basis ? { basis: parsed.basis } : {}) }];
    });
  }

  /** Resolves once `done()` holds (checked at each line), or after `timeoutMs` (false). */
  async until(done: () => boolean, timeoutMs: number): Promise<boolean> {
    return (await this.conditions.until(() => (done() ? true : undefined), timeoutMs)) ?? false;
  }

  /** Once the stream is followed (the watch can miss nothing from then on). */
  streaming(): Promise<boolean> {
    return this.until(() => this.lines.some(({ line }) => line.includes('"state":"streaming"')), 30_000);
  }

  async stop(): Promise<number> {
    this.stopper.abort();
    return this.done;
  }
}

/** A `warden gate --json` run: exit code, result, when it ended. */
export interface GateRun {
  readonly version: number;
  readonly code: number;
  readonly result: GateResult | undefined;
  /** When it started. */
  readonly startedAt: number;
  /** When it returned (its supervisor stopped, its connections closed: the process would exit). */
  readonly endedAt: number;
  /** When it wrote its result. */
  readonly answeredAt: number | undefined;
  readonly lines: readonly string[];
  readonly warnings: readonly string[];
}

export interface GateResult {
  readonly ok: boolean;
  readonly deploymentId?: string;
  readonly awaitingPromotion?: boolean;
  readonly reason?: string;
  readonly rule?: string;
  readonly healthy?: readonly string[];
  readonly unhealthy?: readonly { allocId: string; at: number; reasons: Record<string, string>; basis?: string }[];
  readonly unjudged?: readonly { allocId: string; reason: string }[];
}

async function runGate(jobId: string, version: number, options: { failFast?: boolean; timeoutS: number }): Promise<GateRun> {
  const lines: string[] = [];
  const warnings: string[] = [];
  const startedAt = systemClock.now();
  let answeredAt: number | undefined;
  const write = (line: string): void => {
    answeredAt ??= systemClock.now();
    lines.push(line);
  };
  const io = { env: liveEnv(), write, error: write, logger: collectingLogger(warnings) };
  const code = await gate(jobId, { version, json: true, timeout: options.timeoutS, ...(options.failFast ? { failFast: true } : {}) }, io);
  const endedAt = systemClock.now();
  const record = lines.map((line) => JSON.parse(line) as { type: string } & GateResult).find((parsed) => parsed.type === 'deployment');
  return { version, code, result: record, startedAt, endedAt, answeredAt, lines, warnings };
}

export interface ScenarioRun {
  readonly scenario: LiveScenario;
  readonly jobId: string;
  /** Every version Nomad keeps of the job, by version. */
  readonly jobs: ReadonlyMap<number, Job>;
  /** Nomad's own copy of each allocation at the end. */
  readonly allocations: readonly Allocation[];
  readonly fromStart: WatchRun;
  readonly late: WatchRun;
  readonly recording: string;
  readonly gatesInFlight: readonly GateRun[];
  readonly gatesLate: readonly GateRun[];
}

interface RunContext {
  readonly client: NomadClient;
  /** The rules of the agent's release, which Warden judges by (it asks the agent as this does). */
  readonly rules: NomadRules;
  readonly observer: HealthObserver;
  readonly base: string;
  readonly dir: string;
  track(id: string): string;
}

async function register(client: NomadClient, hcl: string, id: string): Promise<string> {
  const job = await client.parseJob(hcl.replace(/^job "[^"]+"/m, `job "${id}"`), { canonicalize: true });
  return (await client.registerJob(job)).EvalID;
}

/** Jobs by version, read once each (the observer's predicates are synchronous: a miss starts the read and says "not yet"). */
class JobVersions {
  readonly known = new Map<number, Job>();
  private readonly reading = new Set<number>();

  constructor(
    private readonly client: NomadClient,
    private readonly jobId: string,
    private readonly observer: HealthObserver,
  ) {}

  get(version: number): Job | undefined {
    const job = this.known.get(version);
    if (job !== undefined || this.reading.has(version)) return job;
    this.reading.add(version);
    void this.client.getJobVersion(this.jobId, version).then((read) => {
      this.reading.delete(version);
      if (read) this.known.set(version, read);
      this.observer.recheck();
    });
    return undefined;
  }
}

const newest = (deployments: readonly ObservedDeployment[]): ObservedDeployment | undefined => [...deployments].sort((a, b) => b.latest.CreateIndex - a.latest.CreateIndex)[0];

/** How long Nomad may take to be done with a scenario's job. */
const NOMAD_DONE_MS = 180_000;

/** Waits until Nomad is done with the scenario's job (see LiveScenario.done and settled). */
async function nomadDone(scenario: LiveScenario, jobId: string, ctx: RunContext, versions: JobVersions, evalId: string): Promise<void> {
  const { observer, client } = ctx;
  const lastVersion = scenario.finalVersion ?? scenario.versions.length - 1;
  const done = scenario.done ?? 'deployment';
  if (done === 'placement-failed') {
    // The deployment runs on with nothing placed: done once the registration's evaluation failed to place.
    let index = 0;
    const until = systemClock.now() + NOMAD_DONE_MS;
    while (systemClock.now() < until) {
      const { body, meta } = await client.getEvaluation(evalId, { index, waitMs: 2_000 });
      if (body.Status === 'complete' && Object.keys(body.FailedTGAllocs ?? {}).length > 0) return;
      index = meta.lastIndex;
    }
    throw new Error(`waited ${NOMAD_DONE_MS} ms for ${jobId}'s evaluation ${evalId} to fail its placement`);
  }
  await observer.until(
    `Nomad done with ${jobId}`,
    () => {
      const allocations = observer.allocationsOf(jobId);
      if (done === 'allocations-over') return allocations.length > 0 && allocations.every((a) => ['complete', 'failed', 'lost'].includes(a.latest.ClientStatus ?? '')) ? true : undefined;
      const deployment = newest(observer.deploymentsOf(jobId));
      if (deployment === undefined || deployment.latest.JobVersion < lastVersion || !deploymentSettled(deployment.latest)) return undefined;
      for (const allocation of allocations) {
        const job = versions.get(Number(allocation.latest.JobVersion ?? 0));
        if (job === undefined) return undefined;
        const watched = allocation.latest.DeploymentID && typeof policyOf(job, allocation.latest.TaskGroup, ctx.rules) !== 'string';
        // Failed for good, or stopped and over, with its deployment ended: Nomad's client will record nothing more (see nomadVerdicts.ts).
        if (watched && allocation.decision === undefined && !unrecordedFailure(allocation.latest) && !unrecordedStop(allocation.latest)) return undefined;
      }
      return scenario.settled === undefined || scenario.settled(allocations) ? true : undefined;
    },
    NOMAD_DONE_MS,
  ).catch((error: unknown) => {
    // Say what was seen, to tell a slow agent from a scenario that cannot end.
    const seen = {
      allocations: observer.allocationsOf(jobId).map((a) => ({ id: a.latest.ID, client: a.latest.ClientStatus, desired: a.latest.DesiredStatus, deployment: a.latest.DeploymentID, version: a.latest.JobVersion, decision: a.decision })),
      deployments: observer.deploymentsOf(jobId).map((d) => ({ id: d.latest.ID, version: d.latest.JobVersion, status: d.latest.Status, arrivals: Object.fromEntries(d.arrivals) })),
    };
    throw new Error(`${error instanceof Error ? error.message : String(error)}; seen: ${JSON.stringify(seen)}`);
  });
}

async function runScenario(scenario: LiveScenario, ctx: RunContext): Promise<ScenarioRun> {
  const jobId = ctx.track(`${ctx.base}-${jobName(scenario)}`);
  const recording = join(ctx.dir, `${scenario.name}.ndjson`);
  const fromStart = new WatchRun({ job: [jobId] }, recording);
  let late: WatchRun | undefined;
  try {
    return await judgedScenario(scenario, ctx, jobId, recording, fromStart, (run) => (late = run));
  } finally {
    await Promise.all([fromStart.stop(), late?.stop()]);
  }
}

/** Reads with one retry: the agent closes idle keep-alive connections, and a request may meet one closing. */
async function read<T>(get: () => Promise<{ body: T }>): Promise<T> {
  try {
    return (await get()).body;
  } catch {
    return (await get()).body;
  }
}

async function judgedScenario(scenario: LiveScenario, ctx: RunContext, jobId: string, recording: string, fromStart: WatchRun, started: (late: WatchRun) => void): Promise<ScenarioRun> {
  const { client, observer } = ctx;
  await fromStart.streaming();
  const versions = new JobVersions(client, jobId, observer);
  const failFast = scenario.failFast === true;
  const gatesInFlight: Promise<GateRun>[] = [];
  let evalId = '';
  for (const [version, hcl] of scenario.versions.entries()) {
    if (version > 0) {
      await observer.until(`${jobId} version ${version - 1} settled`, () => observer.deploymentsOf(jobId).find((d) => d.latest.JobVersion === version - 1 && deploymentSettled(d.latest)), 120_000);
    }
    evalId = await register(client, hcl, jobId);
    gatesInFlight.push(runGate(jobId, version, { failFast, timeoutS: 120 }));
  }
  if (scenario.stopWhenRunning) {
    await observer.until(`${jobId} running`, () => observer.allocationsOf(jobId).find((a) => a.firstRunningArrivedAt !== undefined), 60_000);
    await client.deregisterJob(jobId);
  }
  await nomadDone(scenario, jobId, ctx, versions, evalId);

  const late = new WatchRun({ job: [jobId] });
  started(late);
  const lastVersion = scenario.finalVersion ?? scenario.versions.length - 1;
  const gatedVersions = Array.from({ length: lastVersion + 1 }, (_, v) => v);
  // As long as the in-flight gates may take: a late gate judges every allocation from its history at once (40 of many_allocs), on a loaded machine too.
  const gatesLate = Promise.all(gatedVersions.map((version) => runGate(jobId, version, { failFast, timeoutS: 120 })));
  const decided = observer.allocationsOf(jobId).filter((a) => a.decision !== undefined).map((a) => a.latest.ID);
  const printedAll = (run: WatchRun) => (): boolean => decided.every((id) => run.verdicts().some((v) => v.allocId === id));
  await Promise.all([fromStart.until(printedAll(fromStart), 20_000), late.until(printedAll(late), 20_000)]);
  const [inFlight, lateGates] = await Promise.all([Promise.all(gatesInFlight), gatesLate]);

  const allocations: Allocation[] = [];
  for (const stub of await read(() => client.jobAllocations(jobId, { all: true }))) allocations.push(await read(() => client.getAllocation(stub.ID)));
  const jobs = new Map((await read(() => client.getJobVersions(jobId))).Versions.map((job) => [job.Version ?? 0, job]));
  await Promise.all([late.stop(), fromStart.stop()]);
  return { scenario, jobId, jobs, allocations, fromStart, late, recording, gatesInFlight: inFlight, gatesLate: lateGates };
}

/**
 * A watch of every scenario's jobs restarted each time another allocation's tasks start running
 * (mid-deployment: running, not yet healthy), at most once a second; the last one runs to the end.
 */
class RestartedWatch {
  readonly incarnations: WatchRun[];
  private finished = false;
  private readonly loop: Promise<void>;

  constructor(
    private readonly prefix: string,
    private readonly observer: HealthObserver,
  ) {
    this.incarnations = [new WatchRun({ jobPrefix: [prefix] })];
    this.loop = this.restartOnRunning();
  }

  private async restartOnRunning(): Promise<void> {
    let running = 0;
    while (!this.finished) {
      const count = (): number => [...this.observer.allocations.values()].filter((a) => a.firstRunningArrivedAt !== undefined).length;
      const more = await this.observer.until('another allocation running', () => (this.finished || count() > running ? count() : undefined), 600_000).catch(() => undefined);
      if (more === undefined || this.finished) return;
      running = more;
      const current = this.incarnations.at(-1) as WatchRun;
      if (systemClock.now() - current.startedAt < 1_000) continue;
      await current.stop();
      if (!this.finished) this.incarnations.push(new WatchRun({ jobPrefix: [this.prefix] }));
    }
  }

  /** The last incarnation prints every verdict in `ids` (bounded), then every incarnation stops. */
  async stop(ids: readonly string[]): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    this.observer.recheck();
    await this.loop;
    const last = this.incarnations.at(-1) as WatchRun;
    await last.until(() => ids.every((id) => last.verdicts().some((v) => v.allocId === id)), 20_000);
    await Promise.all(this.incarnations.map((run) => run.stop()));
  }
}

export interface HealthSuiteReport {
  readonly runs: readonly ScenarioRun[];
  /** Per mode: allocations whose every verdict agreed with Nomad. */
  readonly agreeing: Record<Mode, number>;
  /** Per mode: one line per disagreement. */
  readonly disagreements: Record<Mode, string[]>;
  /** Where Warden differs from Nomad 1.1.2 as documented, one line each. */
  readonly documented: string[];
  /**
   * Where Warden's verdict differs from Nomad's by Nomad's own lag (its tracker sees a start late),
   * one line each; an opposite verdict must have been reported by Warden (`unreported` otherwise).
   */
  readonly explained: string[];
  /** Explained differences of verdict that Warden did not report as a problem. */
  readonly unreported: string[];
  /** Warnings the watches and gates logged (reconnects and the like), for the record. */
  readonly warnings: string[];
  /** Gates whose exit code or result is not Nomad's, or differs between in flight and late. */
  readonly gateDifferences: string[];
  /** Problems the watches printed (stderr) other than their reports of the documented and explained differences. */
  readonly problems: string[];
  /** Recordings of the watches from the start whose replay printed other lines. */
  readonly replayDifferences: string[];
  readonly restarts: number;
}

export interface SuiteOptions {
  /** Appended to every figure's name (" under CPU load"). */
  readonly label?: string;
  /** How far Warden's verdict time may be from Nomad's Timestamp. */
  readonly tolerance: Tolerance;
}

const GATE_CODES: Record<string, number> = { successful: 0, failed: 1, cancelled: 1, 'awaiting-promotion': 3 };

/** The verdict a gate's result gives an allocation: healthy, unhealthy (with reasons), or none (not named, unjudged). */
function gateVerdict(result: GateResult, allocId: string): WardenVerdict | undefined {
  const unhealthy = result.unhealthy?.find((entry) => entry.allocId === allocId);
  if (unhealthy) return { verdict: 'unhealthy', at: unhealthy.at, reasons: unhealthy.reasons, ...(unhealthy.basis ? { basis: unhealthy.basis } : {}) };
  if (result.healthy?.includes(allocId)) return { verdict: 'healthy', at: Number.NaN };
  return undefined;
}

/** Whether a gate's view of an allocation agrees with the expectation (gates give no healthy times). */
function gateAgrees(expected: Expectation, result: GateResult, allocId: string, tolerance: Tolerance, explainedOpposite: boolean): string | undefined {
  const said = gateVerdict(result, allocId);
  // Warden's verdict is the opposite of Nomad's by Nomad's own lag (see compare): the gate says Warden's.
  if (explainedOpposite) return undefined;
  if (expected.kind === 'unrecorded failure') return said?.verdict === 'unhealthy' ? undefined : `${expected.explained}; the gate named it ${said?.verdict ?? 'nothing'}`;
  if (expected.kind !== 'verdict') return said === undefined ? undefined : `Nomad: ${expected.kind}; the gate named it ${said.verdict}`;
  if (expected.healthy) {
    if (said?.verdict === 'unhealthy') return 'Nomad: healthy; the gate named it unhealthy';
    if (result.ok && said === undefined) return `Nomad: healthy; the gate did not count it healthy${result.unjudged?.some((u) => u.allocId === allocId) ? ' (unjudged)' : ''}`;
    return undefined;
  }
  if (said === undefined) return `Nomad: unhealthy; the gate did not name it${result.unjudged?.some((u) => u.allocId === allocId) ? ' (unjudged)' : ''}`;
  const comparison = compare(expected, said, tolerance);
  return comparison.agrees ? undefined : comparison.note;
}

/**
 * What a gate said, without the verdicts' times (a late gate may time an allocation by Nomad's
 * recorded decision) and without the reasons of allocations in `reasonsGone` (Nomad's recorded
 * verdict, its events gone).
 */
function gateSummary(run: GateRun, reasonsGone: ReadonlySet<string>, differing: ReadonlySet<string>): string {
  // An allocation whose verdict is Warden's in flight and Nomad's late (the history that decided it
  // gone), the two opposite by Nomad's own lag: left out, with the count it adds to the headline.
  const unhealthy = run.result?.unhealthy?.filter(({ allocId }) => !differing.has(allocId)).map(({ allocId, reasons }) => ({ allocId, reasons: reasonsGone.has(allocId) ? '(gone)' : reasons }));
  const healthy = run.result?.healthy?.filter((allocId) => !differing.has(allocId));
  const reason = differing.size === 0 ? run.result?.reason : run.result?.reason?.replace(/; \d+ allocations? unhealthy$/, '');
  return JSON.stringify({ code: run.code, ...run.result, ...(unhealthy ? { unhealthy } : {}), ...(healthy ? { healthy } : {}), ...(reason ? { reason } : {}) });
}

/** Allocations a gate named unhealthy by Nomad's recorded verdict with no reasons left. */
function reasonsGoneIn(run: GateRun | undefined): Set<string> {
  return new Set((run?.result?.unhealthy ?? []).filter((entry) => entry.basis === 'nomad' && Object.keys(entry.reasons).length === 0).map((entry) => entry.allocId));
}

/** Deploys `scenarios` side by side and compares Warden's verdicts, every way it runs, with Nomad's. */
export async function runHealthSuite(scenarios: readonly LiveScenario[], jobs: { readonly client: NomadClient; track(id: string): string }, options: SuiteOptions): Promise<HealthSuiteReport> {
  const label = options.label ?? '';
  const base = uniqueJobId('health');
  const dir = mkdtempSync(join(tmpdir(), 'warden-live-health-'));
  const observer = await HealthObserver.start(jobs.client, base, scenarios.map((scenario) => `${base}-${jobName(scenario)}`));
  const restarted = new RestartedWatch(base, observer);
  try {
    await restarted.incarnations[0]?.streaming();
    const release = await readClusterVersion(jobs.client);
    if (release.version === undefined) throw new Error(`the agent's release: ${release.problems.join('; ')}`);
    const { rules } = nomadRulesFor(release.version);
    const ctx: RunContext = { client: jobs.client, rules, observer, base, dir, track: (id) => jobs.track(id) };
    const runs = await Promise.all(scenarios.map((scenario) => runScenario(scenario, ctx)));
    const decided = [...observer.allocations.values()].filter((a) => a.decision !== undefined).map((a) => a.latest.ID);
    await restarted.stop(decided);

    const agreeing = Object.fromEntries(MODES.map((mode) => [mode, 0])) as Record<Mode, number>;
    const disagreements = Object.fromEntries(MODES.map((mode) => [mode, [] as string[]])) as Record<Mode, string[]>;
    const documented: string[] = [];
    const explained: string[] = [];
    const unreported: string[] = [];
    /** Allocations whose difference from Nomad is documented or explained: Warden reporting it is expected. */
    const differing = new Set<string>();
    /** Of those, the ones where Warden's verdict is the opposite of Nomad's (by Nomad's lag). */
    const opposite = new Set<string>();
    const gateDifferences: string[] = [];
    const problems = [...restarted.incarnations.flatMap((run) => run.problems)];
    const warnings = [...restarted.incarnations.flatMap((run) => run.warnings)];
    const replayDifferences: string[] = [];
    const restartedVerdicts = restarted.incarnations.map((run) => run.verdicts());
    const lastIncarnation = restartedVerdicts.at(-1) ?? [];

    for (const run of runs) {
      problems.push(...run.fromStart.problems, ...run.late.problems);
      warnings.push(...run.fromStart.warnings, ...run.late.warnings, ...[...run.gatesInFlight, ...run.gatesLate].flatMap((g) => g.warnings));
      const where = `${run.scenario.name}`;
      for (const allocation of run.allocations) {
        const job = run.jobs.get(Number(allocation.JobVersion ?? 0)) as Job;
        const seen = observer.allocations.get(allocation.ID);
        const expected = expectationFor(allocation, job, seen?.decision, seen?.unhealthyEvents ?? new Map(), ctx.rules, seen?.firstStop);
        const label_ = `${where} ${allocation.Name} ${allocation.ID.slice(0, 8)}`;
        let explainedOpposite = false;
        const judge = (mode: Mode, verdicts: readonly (PrintedVerdict | undefined)[]): void => {
          const notes = verdicts.flatMap((verdict) => {
            const comparison = compare(expected, verdict, options.tolerance);
            if (comparison.agrees && comparison.note && mode === 'watch from the start') {
              (comparison.explained ? explained : documented).push(`${label_}: ${comparison.note}`);
              differing.add(allocation.ID);
            }
            const reversed = verdict !== undefined && expected.kind === 'verdict' && (verdict.verdict === 'healthy') !== expected.healthy;
            if (comparison.explained && reversed && mode === 'watch from the start') {
              explainedOpposite = true;
              opposite.add(allocation.ID);
              if (!run.fromStart.problems.some((line) => line.includes('nomad-disagrees') && line.includes(allocation.ID))) unreported.push(`${label_}: ${comparison.note}`);
            }
            if (comparison.offMs !== undefined && Number.isFinite(comparison.offMs) && mode === 'watch from the start') {
              recordFigure({ name: `verdict time before Nomad's Timestamp (ms)${label}`, value: -comparison.offMs, where: label_ });
            }
            return comparison.agrees ? [] : [`${label_}: ${comparison.note}`];
          });
          if (notes.length === 0) agreeing[mode]++;
          else disagreements[mode].push(...new Set(notes));
          recordFigure({ name: `${notes.length === 0 ? 'agreeing' : 'disagreeing'} with Nomad: ${mode}${label}`, value: 1, where: label_ });
        };
        const printed = (watchRun: WatchRun) => {
          const mine = watchRun.verdicts().filter((v) => v.allocId === allocation.ID);
          if (mine.length > 1) disagreements['watch from the start'].push(`${label_}: ${mine.length} verdicts printed`);
          return mine.at(-1);
        };
        const fromStart = printed(run.fromStart);
        judge('watch from the start', [fromStart]);
        judge('watch started late', [printed(run.late)]);
        const restartedOnes = restartedVerdicts.flatMap((verdicts) => verdicts.filter((v) => v.allocId === allocation.ID));
        const finalOne = lastIncarnation.find((v) => v.allocId === allocation.ID);
        judge('watch restarted mid-deployment', finalOne === undefined ? [undefined] : restartedOnes);

        // Delays: from Nomad's own decision reaching the stream to Warden's line, and from the verdict's due time.
        // (Not where Nomad 1.1.2 decides otherwise, as documented: its decision confirms nothing there.)
        if (fromStart !== undefined && seen?.decision !== undefined && expected.kind === 'verdict' && expected.documented === undefined && !explainedOpposite) {
          recordFigure({ name: `verdict printed after Nomad's health update arrived (ms)${label}`, value: fromStart.printedAt - seen.decision.arrivedAt, where: label_ });
          const timeReached = fromStart.verdict === 'healthy' || Object.values(fromStart.reasons ?? {}).some((reason) => reason.includes('by healthy_deadline'));
          if (timeReached) {
            recordFigure({ name: `time-reached verdict printed after Nomad's health update arrived (ms)${label}`, value: fromStart.printedAt - seen.decision.arrivedAt, where: label_ });
            recordFigure({ name: `time-reached verdict printed after its due time (ms)${label}`, value: fromStart.printedAt - fromStart.at, where: label_ });
          }
        }
        for (const [mode, gates] of [['gate in flight', run.gatesInFlight], ['gate started late', run.gatesLate]] as const) {
          const gated = gates.find((g) => g.result?.deploymentId !== undefined && g.result.deploymentId === allocation.DeploymentID);
          // The gate of its version ended without a result (it timed out): it judged nothing, a disagreement for each allocation.
          const unanswered = gated === undefined && allocation.DeploymentID ? gates.find((g) => g.version === Number(allocation.JobVersion ?? 0) && g.result?.deploymentId === undefined) : undefined;
          if (gated?.result === undefined && unanswered === undefined) continue;
          const note = gated?.result === undefined ? `the gate gave no result: ${unanswered?.result?.reason ?? `exit ${unanswered?.code}`}` : gateAgrees(expected, gated.result, allocation.ID, options.tolerance, explainedOpposite);
          if (note === undefined) agreeing[mode]++;
          else disagreements[mode].push(`${label_}: ${note}`);
          recordFigure({ name: `${note === undefined ? 'agreeing' : 'disagreeing'} with Nomad: ${mode}${label}`, value: 1, where: label_ });
        }
      }

      // Each gate: Nomad's end of that version's deployment, the same in flight and late.
      for (const inFlight of run.gatesInFlight) {
        const lateGate = run.gatesLate.find((g) => g.version === inFlight.version);
        const deployment = newest(observer.deploymentsOf(run.jobId).filter((d) => d.latest.JobVersion === inFlight.version));
        const status = deployment === undefined ? undefined : deploymentSettled(deployment.latest) && deployment.latest.Status === 'running' ? 'awaiting-promotion' : deployment.latest.Status;
        // No deployment (batch), or a placement that failed (--fail-fast ends it): not healthy.
        const expectedCode = status === undefined || run.scenario.done === 'placement-failed' ? 1 : GATE_CODES[status];
        for (const [mode, gateRun] of [['in flight', inFlight], ['late', lateGate]] as const) {
          if (gateRun === undefined) continue;
          const logged = gateRun.warnings.length === 0 ? '' : `; it logged: ${gateRun.warnings.join(' | ').slice(0, 600)}`;
          if (gateRun.code !== expectedCode) gateDifferences.push(`${where} version ${gateRun.version} (${mode}): exit ${gateRun.code}, Nomad's deployment ${status ?? 'none'}: ${gateRun.lines.join(' | ').slice(0, 600)}${logged}`);
        }
        const gone = new Set([...reasonsGoneIn(inFlight), ...reasonsGoneIn(lateGate)]);
        if (lateGate !== undefined && gateSummary(lateGate, gone, opposite) !== gateSummary(inFlight, gone, opposite)) {
          gateDifferences.push(`${where} version ${inFlight.version}: in flight ${gateSummary(inFlight, gone, opposite)}, late ${gateSummary(lateGate, gone, opposite)}`);
        }
        if (lateGate?.answeredAt !== undefined && lateGate.code === expectedCode) {
          recordFigure({ name: `late gate's result printed after it started (ms)${label}`, value: lateGate.answeredAt - lateGate.startedAt, where: `${where} version ${lateGate.version}` });
        }
        const ended = status === undefined ? undefined : deployment?.arrivals.get(status);
        if (ended !== undefined && inFlight.code === expectedCode && !(run.scenario.failFast ?? false)) {
          recordFigure({ name: `gate exit after Nomad's deployment ended (ms)${label}`, value: inFlight.endedAt - ended, where: `${where} version ${inFlight.version}` });
          if (inFlight.answeredAt !== undefined) recordFigure({ name: `gate result printed after Nomad's deployment ended (ms)${label}`, value: inFlight.answeredAt - ended, where: `${where} version ${inFlight.version}` });
        }
      }

      // On request, the live scenarios' traffic becomes their fixtures (see liveFixtures.ts).
      if (process.env.WARDEN_LIVE_FIXTURES === '1' && label === '' && run.scenario.dir === LIVE_SCENARIOS) {
        const printed = run.fromStart.lines.map((l) => l.line);
        await writeLiveFixture(join(LIVE_SCENARIOS, run.scenario.name), { name: run.scenario.name, jobId: run.jobId, recording: run.recording, printed, observed: observer.allocationsOf(run.jobId) });
      }

      // The recording of the watch from the start replays to the lines it printed.
      const replayed: string[] = [];
      const notes: string[] = [];
      await replay(run.recording, { json: true }, { env: {}, write: (line) => replayed.push(line), error: (line) => notes.push(line) });
      const judging = (lines: readonly string[]): string[] => lines.filter((line) => /"type":"(state|verdict)"/.test(line));
      const live = judging(run.fromStart.lines.map((l) => l.line));
      if (JSON.stringify(judging(replayed)) !== JSON.stringify(live)) {
        replayDifferences.push(`${where}: live ${JSON.stringify(live).slice(0, 800)} replayed ${JSON.stringify(judging(replayed)).slice(0, 800)}${notes.length > 0 ? ` (${notes.join('; ')})` : ''}`);
      }
    }
    const disagreementsReported = problems.filter((line) => line.includes('"nomad-disagrees"')).length;
    recordFigure({ name: `disagreements with Nomad Warden reported (problem lines, all watches)${label}`, value: disagreementsReported });
    const unexpected = problems.filter((line) => !(line.includes('"nomad-disagrees"') && [...differing].some((id) => line.includes(id))));
    return { runs, agreeing, disagreements, documented, explained, unreported, warnings, gateDifferences, problems: unexpected, replayDifferences, restarts: restarted.incarnations.length - 1 };
  } finally {
    await restarted.stop([]);
    observer.stop();
    if (process.env.WARDEN_LIVE_KEEP === undefined) rmSync(dir, { recursive: true, force: true });
    else process.stderr.write(`live health recordings kept in ${dir}\n`);
  }
}
