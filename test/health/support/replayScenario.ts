/**
 * Replays a recorded Nomad scenario (test/fixtures/nomad-1.1.2/scenarios/<name>) through the health
 * registry on a VirtualClock at the recorded times, with Nomad's own answer removed from the input:
 * every DeploymentStatus and every "Alloc Unhealthy" task event is stripped before the adapters see
 * an allocation. Each allocation is joined with the job version current when it was placed
 * (job.json / job.v1.json, chosen by the Version of the stream's latest Job event).
 * By today's rules, or by those of `release`. With `startAt`, judging starts late, as a supervisor started then would: every allocation as it
 * stood at that moment is judged at once from its history (it lists first), the rest of the stream
 * is watched.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { VirtualClock } from '../../../src/clock/index.js';
import { HealthRegistry, healthPolicyFor, type HealthOutcome, type OptInHealthPolicy } from '../../../src/health/index.js';
import { judgeSight } from '../../../src/health/historyFeed.js';
import { ClockHorizon } from '../../../src/health/horizon.js';
import type { HealthUndetermined } from '../../../machines/allocationHealthTypes.js';
import { NEWEST_NOMAD_RULES, nomadRulesFor } from '../../../machines/nomadRules.js';
import { parseNomadJson } from '../../../src/nomad/json.js';
import type { Allocation, EventFrame, Job } from '../../../src/nomad/types.js';
import { isHeartbeatLine, listScenarios, readScenario, requestedIndex, type Scenario } from '../../../src/testing/recording.js';
import { parseLossless } from '../../../src/testing/losslessJson.js';

export const SCENARIOS_DIR = join(process.cwd(), 'test', 'fixtures', 'nomad-1.1.2', 'scenarios');
/** Recordings made from the live tier's runs (test/fixtures/nomad-1.1.2-live/README.md), named `live/<name>`. */
export const LIVE_SCENARIOS_DIR = join(process.cwd(), 'test', 'fixtures', 'nomad-1.1.2-live', 'scenarios');
const LIVE = 'live/';

/** The folder of scenario `name` (`live/<name>`: a live recording). */
export function scenarioDir(name: string): string {
  return name.startsWith(LIVE) ? join(LIVE_SCENARIOS_DIR, name.slice(LIVE.length)) : join(SCENARIOS_DIR, name);
}

/** The live recordings' scenarios, as `live/<name>`. */
export function liveScenarios(): string[] {
  return listScenarios(LIVE_SCENARIOS_DIR).map((name) => `${LIVE}${name}`);
}

/** Every version of the scenario's job it keeps (job.json, job.v1.json, job.v2.json…), by version. */
export function scenarioJobs(scenario: Scenario): Map<number, Job> {
  const jobs = new Map<number, Job>();
  const add = (job: unknown): void => void (job !== undefined && jobs.set(Number((job as Job).Version), job as Job));
  add(scenario.job);
  add(scenario.jobV1);
  for (let v = 2; existsSync(join(scenario.dir, `job.v${v}.json`)); v++) add(parseLossless(readFileSync(join(scenario.dir, `job.v${v}.json`), 'utf8')));
  return jobs;
}

export interface ReplayedAllocation {
  readonly id: string;
  /** Absent when the allocation was not watched; then `unwatched` says why. */
  readonly outcome?: HealthOutcome | HealthUndetermined;
  readonly unwatched?: string;
  /** Every state the machine passed through, in order. */
  readonly states: readonly string[];
  readonly problems: readonly string[];
  /** When judging began for it (clock time) and the desired status it had then. */
  readonly firstSeen: { readonly at: number; readonly desiredStatus: string | undefined };
}

export interface Replay {
  readonly scenario: Scenario;
  readonly jobs: ReadonlyMap<number, Job>;
  readonly allocations: ReadonlyMap<string, ReplayedAllocation>;
}

function stripNomadVerdict(allocation: Allocation): Allocation {
  const { DeploymentStatus: _ignored, ...rest } = allocation;
  const taskStates = rest.TaskStates ?? {};
  const stripped: NonNullable<Allocation['TaskStates']> = {};
  for (const [task, state] of Object.entries(taskStates)) {
    stripped[task] = { ...state, Events: (state.Events ?? []).filter((event) => event.Type !== 'Alloc Unhealthy') };
  }
  return { ...rest, TaskStates: stripped };
}

/** Nomad's client is still watching it for a deployment (src/intake/allocationIntake.ts waits for its decision then). */
function nomadStillDeciding(allocation: Allocation): boolean {
  return allocation.DesiredStatus === 'run' && !['complete', 'failed', 'lost'].includes(allocation.ClientStatus ?? '') && Boolean(allocation.DeploymentID);
}

export interface ReplayOptions {
  readonly optIn?: OptInHealthPolicy;
  /** The Nomad release whose rules judge (default: today's). */
  readonly release?: string;
  /** Stream time (ms) at which judging starts; default 0, watching from the start. */
  readonly startAt?: number;
  /**
   * Keep Nomad's own answer in the input (its DeploymentStatus, its Alloc Unhealthy events): what a
   * late start judges by where the kept history cannot decide (default false: stripped).
   */
  readonly keepNomadVerdict?: boolean;
}

export function replayScenario(name: string, { optIn, startAt = 0, keepNomadVerdict = false, release }: ReplayOptions = {}): Replay {
  const rules = release === undefined ? NEWEST_NOMAD_RULES : nomadRulesFor(release).rules;
  const scenario = readScenario(scenarioDir(name));
  const jobs = scenarioJobs(scenario);
  const start = Date.parse(scenario.meta.stream_opened_at);
  const clock = new VirtualClock({ start: start + startAt });
  // Lines arrive when they were recorded, up to a few hundred ms after what they tell: time passes
  // for a machine a second behind the clock, as for the supervisor (src/intake/freshness.ts).
  const registry = new HealthRegistry({ clock, horizon: new ClockHorizon(clock, { settleMs: 1_000 }) });
  const results = new Map<string, { outcome?: HealthOutcome | HealthUndetermined; unwatched?: string; states: string[]; problems: string[]; firstSeen: ReplayedAllocation['firstSeen'] }>();
  registry.subscribe((change) => {
    const entry = results.get(change.allocationId);
    if (entry === undefined) return;
    if (change.type === 'transition') entry.states.push(change.to);
    else entry.outcome = change.outcome;
  });

  const fromIndex = requestedIndex(scenario);
  let currentVersion = Math.min(...jobs.keys());
  const placedWith = new Map<string, number>();
  // Before judging starts: the latest state of each allocation, as a listing would give it.
  let listed: Map<string, Allocation> | undefined = new Map();
  const seenIndexes = new Set<number>();
  for (const line of scenario.stream) {
    if (listed !== undefined && line.t > startAt) {
      for (const allocation of listed.values()) feed(allocation);
      listed = undefined;
    }
    clock.advanceTo(Math.max(start + line.t, clock.now()));
    if (isHeartbeatLine(line)) continue;
    const frame = parseNomadJson(line.raw) as EventFrame;
    // The stream starts at the closest index, not after it: drop stale and repeated batches.
    if (frame.Index < fromIndex || seenIndexes.has(frame.Index)) continue;
    seenIndexes.add(frame.Index);
    for (const event of frame.Events) {
      if (event.Topic === 'Job') {
        const job = (event.Payload as { Job: Job }).Job;
        if (job.ID === scenario.meta.job_id && jobs.has(Number(job.Version))) currentVersion = Number(job.Version);
        continue;
      }
      if (event.Topic !== 'Allocation') continue;
      const received = (event.Payload as { Allocation: Allocation }).Allocation;
      const allocation = keepNomadVerdict ? received : stripNomadVerdict(received);
      if (allocation.JobID !== scenario.meta.job_id) continue;
      // An allocation keeps the job version it was placed with.
      if (!placedWith.has(allocation.ID)) placedWith.set(allocation.ID, currentVersion);
      if (listed === undefined) feed(allocation);
      else listed.set(allocation.ID, allocation);
    }
  }
  for (const allocation of listed?.values() ?? []) feed(allocation);
  clock.advanceTo(start + Number(scenario.meta.stream_closed_t) + 1_000);

  function feed(allocation: Allocation): void {
    const known = results.get(allocation.ID);
    if (known?.unwatched !== undefined || known?.outcome !== undefined) return;
    const job = jobs.get(placedWith.get(allocation.ID) as number) as Job;
    const group = (job.TaskGroups ?? []).find((candidate) => candidate.Name === allocation.TaskGroup);
    if (group === undefined) throw new Error(`${scenario.name}: no group ${allocation.TaskGroup}`);
    const decision = healthPolicyFor(job, allocation.TaskGroup, { deployment: Boolean(allocation.DeploymentID), rules, ...(optIn ? { optIn } : {}) });
    const entry = known ?? { states: ['pending'], problems: [], firstSeen: { at: clock.now(), desiredStatus: allocation.DesiredStatus } };
    if (!decision.watched) {
      results.set(allocation.ID, { ...entry, states: [], unwatched: decision.reason });
      return;
    }
    results.set(allocation.ID, entry);
    const sight = judgeSight(registry, allocation, group, decision.policy);
    entry.problems.push(...sight.problems);
    // As the supervisor: undetermined while Nomad's client still watches it is a wait for Nomad's decision.
    if (sight.kind === 'recorded' || (sight.kind === 'undetermined' && !nomadStillDeciding(allocation))) entry.outcome = sight.outcome;
  }

  const allocations = new Map<string, ReplayedAllocation>();
  for (const [id, entry] of results) allocations.set(id, { id, ...entry });
  return { scenario, jobs, allocations };
}
