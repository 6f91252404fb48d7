/**
 * 100,000 allocation health machines on one VirtualClock (HealthRegistry: stored snapshots stepped
 * with pure transitions, one clock timer each), every one taken pending → running →
 * minHealthyWait → healthy by two task updates and its min_healthy_time timer. Beside it, in the
 * same run, a bare JSON.parse of the recorded Nomad allocation events that carry those updates
 * (many_allocs: the AllocationUpdated event that reports the task pending, and the one that
 * reports it running), and, for the design choice, XState's default actor of the same machine.
 *
 * And the pipeline as it runs on a real stream: one many_allocs allocation's recorded events, from
 * placement to Nomad's health report, each read by the adapter and offered to the registry
 * (which steps the machine only when the compact view changed), beside JSON.parse of those events.
 *
 * Figures: heap bytes per live allocation (tracked, timer armed), microseconds per event, and the
 * ratios that matter: machine µs per event / JSON.parse µs per event, heap per allocation / 3 KiB.
 *
 *   npx tsx bench/health-machine.ts [--allocations 100000]
 */
import { performance } from 'node:perf_hooks';
import { createActor, type Actor } from 'xstate';
import { allocationHealthMachine } from '../machines/allocationHealth.js';
import type { AllocationView, HealthPolicy, TaskView } from '../machines/allocationHealthTypes.js';
import { VirtualClock } from '../src/clock/index.js';
import { HealthRegistry, allocationView, healthPolicyFor } from '../src/health/index.js';
import { parseNomadJson } from '../src/nomad/json.js';
import type { Allocation, Job, TaskGroup } from '../src/nomad/types.js';
import { numberOption } from './support/figures.js';
import { manyAllocs } from './support/manyAllocs.js';
import { heapUsed } from './support/heap.js';
import { NEWEST_NOMAD_RULES } from '../machines/nomadRules.js';

const ALLOCATIONS = numberOption('allocations', 100_000);
const ACTOR_BASELINE = Math.min(ALLOCATIONS, 20_000);


// ---- the recorded events: one allocation's "task pending" and "task running" updates ----
const scenario = manyAllocs();
interface RecordedEvent {
  Topic: string;
  Type: string;
  Payload: { Allocation?: { ID: string; TaskStates?: Record<string, { State: string }> | null } };
}
const recorded = new Map<string, Map<string, string>>();
for (const { raw } of scenario.stream) {
  const frame = JSON.parse(raw) as { Events?: RecordedEvent[] };
  for (const event of frame.Events ?? []) {
    const allocation = event.Payload.Allocation;
    const state = allocation?.TaskStates?.main?.State;
    if (event.Topic !== 'Allocation' || event.Type !== 'AllocationUpdated' || allocation === undefined || state === undefined) continue;
    const byState = recorded.get(allocation.ID) ?? new Map<string, string>();
    if (!byState.has(state)) byState.set(state, JSON.stringify(event));
    recorded.set(allocation.ID, byState);
  }
}
const pair = [...recorded.values()].find((byState) => byState.has('pending') && byState.has('running'));
if (pair === undefined) throw new Error('many_allocs has no allocation reported both pending and running');
const eventTexts = [pair.get('pending') as string, pair.get('running') as string];

function jsonParseMicros(): number {
  let sink = 0;
  const start = performance.now();
  for (let i = 0; i < ALLOCATIONS; i += 1) {
    for (const text of eventTexts) sink += (JSON.parse(text) as { Index: number }).Index;
  }
  const micros = ((performance.now() - start) * 1000) / (ALLOCATIONS * eventTexts.length);
  if (sink === 0) throw new Error('unreachable');
  return micros;
}

// ---- the machines ----
const T0 = Date.parse('2026-11-29T17:09:00Z');
const policy: HealthPolicy = {
  source: 'update',
  minHealthyTimeMs: 1000,
  healthyDeadlineMs: 300_000,
  useChecks: false,
  expectedChecks: [],
  completedTasksAreHealthy: false,
  rules: NEWEST_NOMAD_RULES,
  lostAfterMs: null,
};
const pendingTask = (): TaskView => ({ state: 'pending', failed: false, restarts: 0, startedAt: null, finishedAt: null, hook: null, sidecar: false });
const runningTask = (startedAt: number): TaskView => ({ ...pendingTask(), state: 'running', startedAt });
// Fresh objects per allocation and update, as parsing each event would give.
const placed = (): AllocationView => ({ clientStatus: 'pending', desiredStatus: 'run', tasks: { main: pendingTask(), logs: pendingTask() } });
const oneRunning = (i: number): AllocationView => ({
  clientStatus: 'running',
  desiredStatus: 'run',
  tasks: { main: runningTask(T0 + (i % 500)), logs: pendingTask() },
});
const bothRunning = (i: number): AllocationView => ({
  clientStatus: 'running',
  desiredStatus: 'run',
  tasks: { main: runningTask(T0 + (i % 500)), logs: runningTask(T0 + 500 + (i % 500)) },
});

interface MachineFigures {
  trackMicros: number;
  updateMicros: number;
  timerMicros: number;
  heapBytesPerAllocation: number;
  healthy: number;
}

function runRegistry(count: number): MachineFigures {
  const ids = Array.from({ length: count }, (_, i) => `alloc-${i.toString(16).padStart(8, '0')}-0000-0000-0000-000000000000`);
  const clock = new VirtualClock({ start: T0 });
  const registry = new HealthRegistry({ clock });
  let healthy = 0;
  registry.subscribe((change) => {
    if (change.type === 'outcome' && 'healthy' in change.outcome && change.outcome.healthy) healthy += 1;
  });
  const before = heapUsed();
  let start = performance.now();
  for (let i = 0; i < count; i += 1) registry.track(ids[i] as string, policy, placed());
  const trackMicros = ((performance.now() - start) * 1000) / count;
  clock.advanceTo(T0 + 600);
  start = performance.now();
  for (let i = 0; i < count; i += 1) registry.updateAllocation(ids[i] as string, oneRunning(i));
  for (let i = 0; i < count; i += 1) registry.updateAllocation(ids[i] as string, bothRunning(i));
  const updateMicros = ((performance.now() - start) * 1000) / (2 * count);
  const heapBytesPerAllocation = (heapUsed() - before) / count;
  start = performance.now();
  clock.advanceTo(T0 + 3000);
  const timerMicros = ((performance.now() - start) * 1000) / count;
  if (registry.status(ids[0] as string)?.state !== 'healthy') throw new Error('allocations did not become healthy');
  return { trackMicros, updateMicros, timerMicros, heapBytesPerAllocation, healthy };
}

/** The alternative we did not take: XState's default actor per allocation (no timers armed here). */
function runActors(count: number): { heapBytesPerActor: number; eventMicros: number } {
  const clock = new VirtualClock({ start: T0 });
  const before = heapUsed();
  const actors: Actor<typeof allocationHealthMachine>[] = [];
  for (let i = 0; i < count; i += 1) {
    const actor = createActor(allocationHealthMachine, { input: { policy, now: T0 }, clock }).start();
    actor.send({ type: 'observe', view: placed(), now: T0 });
    actors.push(actor);
  }
  const start = performance.now();
  for (let i = 0; i < count; i += 1) (actors[i] as Actor<typeof allocationHealthMachine>).send({ type: 'observe', view: oneRunning(i), now: T0 + 600 });
  for (let i = 0; i < count; i += 1) (actors[i] as Actor<typeof allocationHealthMachine>).send({ type: 'observe', view: bothRunning(i), now: T0 + 600 });
  const eventMicros = ((performance.now() - start) * 1000) / (2 * count);
  const heapBytesPerActor = (heapUsed() - before) / count;
  if (actors[0]?.getSnapshot().value !== 'minHealthyWait') throw new Error('actor baseline went wrong');
  return { heapBytesPerActor, eventMicros };
}

// ---- the recorded pipeline: one allocation's events from placement to health, as Nomad sent them ----
const job = parseNomadJson(scenario.jobText) as Job;
const group = (job.TaskGroups as TaskGroup[])[0] as TaskGroup;
const streamStart = Date.parse(scenario.meta.stream_opened_at);
const journeys = new Map<string, { t: number; text: string; allocation: Allocation }[]>();
for (const { t, raw } of scenario.stream) {
  const frame = JSON.parse(raw) as { Events?: RecordedEvent[] };
  for (const event of frame.Events ?? []) {
    if (event.Topic !== 'Allocation') continue;
    const allocation = event.Payload.Allocation as unknown as Allocation;
    const journey = journeys.get(allocation.ID) ?? [];
    // Up to the event that reports Nomad's own health verdict, which ends the journey.
    if (journey.at(-1)?.allocation.DeploymentStatus?.Healthy !== true) journey.push({ t, text: JSON.stringify(event), allocation });
    journeys.set(allocation.ID, journey);
  }
}
const journey = [...journeys.values()].find(
  (events) => events[0]?.allocation.ClientStatus === 'pending' && events.at(-1)?.allocation.DeploymentStatus?.Healthy === true,
);
if (journey === undefined) throw new Error('many_allocs has no allocation that became healthy');
const journeyDecision = healthPolicyFor(job, group.Name, { deployment: true });
if (!journeyDecision.watched) throw new Error('many_allocs is not watched');

function recordedJsonParseMicros(): number {
  let sink = 0;
  const start = performance.now();
  for (let i = 0; i < ALLOCATIONS; i += 1) for (const { text } of journey as { text: string }[]) sink += (JSON.parse(text) as { Index: number }).Index;
  if (sink === 0) throw new Error('unreachable');
  return ((performance.now() - start) * 1000) / (ALLOCATIONS * (journey as unknown[]).length);
}

/** Adapter + registry for every received event (unchanged views stop at the equality check), timers included. */
function recordedPipelineMicros(): { micros: number; machineSteps: number; healthy: number } {
  const clock = new VirtualClock({ start: streamStart });
  const registry = new HealthRegistry({ clock });
  let healthy = 0;
  let machineSteps = 0;
  registry.subscribe((change) => {
    if (change.type === 'outcome' && 'healthy' in change.outcome && change.outcome.healthy) healthy += 1;
  });
  const events = journey as { t: number; allocation: Allocation }[];
  const policyOfJourney = (journeyDecision as { policy: HealthPolicy }).policy;
  const start = performance.now();
  events.forEach(({ t, allocation }, k) => {
    clock.advanceTo(streamStart + t);
    for (let i = 0; i < ALLOCATIONS; i += 1) {
      const { view } = allocationView(allocation, group);
      if (k === 0) registry.track(`journey-${i}`, policyOfJourney, view);
      else if (registry.updateAllocation(`journey-${i}`, view)) machineSteps += 1;
    }
  });
  clock.advance(60_000);
  const micros = ((performance.now() - start) * 1000) / (ALLOCATIONS * events.length);
  return { micros, machineSteps: ALLOCATIONS + machineSteps + healthy, healthy };
}

// Warm both paths up, then measure; JSON.parse before and after the machines, averaged.
runRegistry(5000);
jsonParseMicros();
const parseBefore = jsonParseMicros();
const machines = runRegistry(ALLOCATIONS);
const parseAfter = jsonParseMicros();
const actors = runActors(ACTOR_BASELINE);
const recordedParse = recordedJsonParseMicros();
const pipeline = recordedPipelineMicros();
const recordedParseAfter = recordedJsonParseMicros();
const parseMicros = (parseBefore + parseAfter) / 2;
const machineMicros = (2 * machines.updateMicros + machines.timerMicros) / 3;

const round = (value: number, digits = 2): number => Number(value.toFixed(digits));
console.log(
  JSON.stringify({
    bench: 'health-machine',
    allocations: ALLOCATIONS,
    healthy: machines.healthy,
    machine: {
      heapBytesPerLiveAllocation: Math.round(machines.heapBytesPerAllocation),
      microsPerEvent: round(machineMicros),
      microsPerTaskUpdate: round(machines.updateMicros),
      microsPerTimer: round(machines.timerMicros),
      microsPerTrack: round(machines.trackMicros),
    },
    jsonParse: {
      bytesPerEvent: Math.round(eventTexts.reduce((sum, text) => sum + text.length, 0) / eventTexts.length),
      microsPerEvent: round(parseMicros),
    },
    recordedJourney: {
      // many_allocs: one allocation's Allocation events from placement to Nomad's health report.
      eventsPerAllocation: journey.length,
      machineStepsPerAllocation: round(pipeline.machineSteps / ALLOCATIONS),
      healthy: pipeline.healthy,
      pipelineMicrosPerEvent: round(pipeline.micros),
      jsonParseMicrosPerEvent: round((recordedParse + recordedParseAfter) / 2),
    },
    xstateDefaultActor: {
      actors: ACTOR_BASELINE,
      heapBytesPerActor: Math.round(actors.heapBytesPerActor),
      microsPerEvent: round(actors.eventMicros),
    },
    ratios: {
      machineMicrosPerEventOverJsonParse: round(machineMicros / parseMicros, 3),
      heapPerAllocationOverTarget3KiB: round(machines.heapBytesPerAllocation / 3072, 3),
      recordedPipelineOverJsonParse: round(pipeline.micros / ((recordedParse + recordedParseAfter) / 2), 3),
      actorMicrosPerEventOverJsonParse: round(actors.eventMicros / parseMicros, 3),
      actorHeapOverStoredSnapshot: round(actors.heapBytesPerActor / machines.heapBytesPerAllocation, 3),
    },
  }),
);
