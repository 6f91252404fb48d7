/**
 * Replay against reality: every allocation of every recorded Nomad 1.1.2 scenario, fed with Nomad's
 * own answer stripped, must reach the verdict of the fixtures README table "Verdicts Warden must
 * reach": judged by Nomad 1.1.2's own rules (the recordings' release), the verdict Nomad 1.1.2
 * recorded, less Warden's deliberate differences; judged by today's rules, 1.1.2's answer translated
 * by the documented changes since. Expectations are derived from expected.json (what Nomad 1.1.2
 * concluded) and those rules, never typed in per allocation.
 */
import { durationMs, parseNomadTime, type HealthOutcome, type OptInHealthPolicy } from '../../src/health/index.js';
import type { HealthUndetermined } from '../../machines/allocationHealthTypes.js';
import { todaysWords } from '../../src/health/nomadDecision.js';
import { isHeartbeatLine, listScenarios } from '../../src/testing/recording.js';
import type { Job, TaskGroup } from '../../src/nomad/types.js';
import { liveScenarios, replayScenario, SCENARIOS_DIR, type Replay } from './support/replayScenario.js';

interface ExpectedTaskState {
  State: string;
  Failed: boolean;
  StartedAt: string | null;
  FinishedAt: string | null;
  Events: { Type: string; Time: bigint | number }[];
}

interface ExpectedAllocation {
  ID: string;
  Name: string;
  JobVersion: number;
  DesiredStatus: string;
  verdict: 'healthy' | 'unhealthy' | 'none';
  DeploymentStatus: { Healthy: boolean | null; Timestamp: string | null } | null;
  AllocUnhealthyEvents: { Task: string; DisplayMessage: string; Time: bigint | number }[];
  TaskStates_extra: Record<string, ExpectedTaskState>;
}

type Expectation =
  | { kind: 'none' }
  | { kind: 'stopped' }
  | { kind: 'verdict'; healthy: boolean; reasons: Record<string, string>; at: number; toleranceMs: number; why: string };

const ms = (rfc3339: string): number => {
  const parsed = parseNomadTime(rfc3339);
  if (!parsed.ok || parsed.ms === null) throw new Error(`fixture time ${rfc3339} does not parse`);
  return parsed.ms;
};
const nanosToMs = (time: bigint | number): number => (typeof time === 'bigint' ? Number(time / 1000n) / 1000 : time / 1e6);

/** The allocation's group ("<job>.<group>[<index>]") in the job version it runs. */
function groupOf(replay: Replay, allocation: Pick<ExpectedAllocation, 'Name' | 'JobVersion'>): TaskGroup {
  const job = replay.jobs.get(allocation.JobVersion) as Job;
  const name = /\.([^.[]+)\[\d+\]$/.exec(allocation.Name)?.[1];
  return (job.TaskGroups as TaskGroup[]).find((group) => group.Name === name) as TaskGroup;
}

/** Latest start among the tasks today's tracker evaluates (a successful poststart task is skipped). */
function latestEvaluatedStart(group: TaskGroup, states: Record<string, ExpectedTaskState>): number {
  const starts = group.Tasks.filter((task) => {
    const hook = task.Lifecycle?.Sidecar ? null : (task.Lifecycle?.Hook ?? null);
    const state = states[task.Name] as ExpectedTaskState;
    return hook !== 'poststop' && !(hook === 'poststart' && state.State === 'dead' && !state.Failed);
  });
  return Math.max(...starts.map((task) => ms(states[task.Name]?.StartedAt as string)));
}

/** Nomad 1.1.2's answer, translated into today's rules (the README's "why they differ" column). */
function expectationFor(replay: Replay, allocation: ExpectedAllocation): Expectation {
  if (allocation.verdict === 'none') return { kind: 'none' };
  const group = groupOf(replay, allocation);
  const update = group.Update as NonNullable<TaskGroup['Update']>;
  const minHealthyMs = durationMs(update.MinHealthyTime) as number;
  const events = allocation.AllocUnhealthyEvents;
  // 1.1.2's client never saw the server's stop: it judged a task it was killing.
  if (allocation.verdict === 'unhealthy' && events.length === 0 && allocation.DesiredStatus === 'stop') return { kind: 'stopped' };
  const nomadAt = ms(allocation.DeploymentStatus?.Timestamp as string);
  if (allocation.verdict === 'healthy') {
    // Within 100 ms of Nomad's own timestamp; the data Warden reads it from (StartedAt + min_healthy_time)
    // agrees, where the task has not restarted since (StartedAt is its latest run's).
    const restarted = Object.values(allocation.TaskStates_extra).some((state) => (state as { Restarts?: number }).Restarts);
    if (!restarted) expect(Math.abs(latestEvaluatedStart(group, allocation.TaskStates_extra) + minHealthyMs - nomadAt)).toBeLessThan(100);
    return { kind: 'verdict', healthy: true, reasons: {}, at: nomadAt, toleranceMs: 100, why: "Nomad's healthy Timestamp" };
  }
  const successfulPoststart = group.Tasks.some((task) => {
    const state = allocation.TaskStates_extra[task.Name] as ExpectedTaskState;
    return task.Lifecycle?.Hook === 'poststart' && !task.Lifecycle.Sidecar && state.State === 'dead' && !state.Failed;
  });
  const failedTask = Object.values(allocation.TaskStates_extra).some((state) => state.Failed);
  if (successfulPoststart && !failedTask) {
    // 1.1.2 failed the allocation when a poststart task exited 0; today it is skipped.
    const at = latestEvaluatedStart(group, allocation.TaskStates_extra) + minHealthyMs;
    return { kind: 'verdict', healthy: true, reasons: {}, at, toleranceMs: 1, why: 'poststart success is not a failure' };
  }
  const reasons: Record<string, string> = {};
  const healthyDeadlineMs = durationMs(update.HealthyDeadline) as number;
  for (const event of events) reasons[event.Task] = todaysWords(event.DisplayMessage, { healthyDeadlineMs });
  const deadline = events.some((event) => event.DisplayMessage.endsWith('by deadline'));
  if (deadline) {
    const at = nanosToMs((events[0] as ExpectedAllocation['AllocUnhealthyEvents'][number]).Time);
    return { kind: 'verdict', healthy: false, reasons, at, toleranceMs: 500, why: 'healthy_deadline' };
  }
  return { kind: 'verdict', healthy: false, reasons, at: nomadAt, toleranceMs: 100, why: 'failure' };
}

/**
 * Nomad 1.1.2's answer as Warden judging by 1.1.2's rules gives it: the same verdict, at the same
 * time, with Nomad's words, less its two deliberate differences (README "Deliberate differences"):
 * a stopped allocation has no verdict; a running task that had run long enough by the real
 * deadline is not blamed (Nomad compares with a deadline it never set), and the poststart task whose
 * successful exit failed the allocation is named, as Nomad names no lifecycle task.
 */
function expectationBy112(replay: Replay, allocation: ExpectedAllocation): Expectation {
  if (allocation.verdict === 'none') return { kind: 'none' };
  if (allocation.verdict === 'unhealthy' && allocation.AllocUnhealthyEvents.length === 0 && allocation.DesiredStatus === 'stop') return { kind: 'stopped' };
  const nomadAt = ms(allocation.DeploymentStatus?.Timestamp as string);
  if (allocation.verdict === 'healthy') return { kind: 'verdict', healthy: true, reasons: {}, at: nomadAt, toleranceMs: 100, why: "Nomad's healthy Timestamp" };
  const group = groupOf(replay, allocation);
  const update = group.Update as NonNullable<TaskGroup['Update']>;
  const minHealthyMs = durationMs(update.MinHealthyTime) as number;
  const received = Math.min(...Object.values(allocation.TaskStates_extra).flatMap((state) => state.Events.filter((e) => e.Type === 'Received').map((e) => nanosToMs(e.Time))));
  const deadline = received + (durationMs(update.HealthyDeadline) as number);
  const reasons: Record<string, string> = {};
  for (const event of allocation.AllocUnhealthyEvents) {
    const state = allocation.TaskStates_extra[event.Task] as ExpectedTaskState;
    // With its Received events capped away, when the deadline came is unknown: Nomad's words stand.
    const ranLongEnough = Number.isFinite(deadline) && event.DisplayMessage.startsWith('Task not running for min_healthy_time') && ms(state.StartedAt as string) + minHealthyMs <= deadline;
    if (!ranLongEnough) reasons[event.Task] = event.DisplayMessage;
  }
  for (const task of group.Tasks) {
    const state = allocation.TaskStates_extra[task.Name] as ExpectedTaskState;
    if (task.Lifecycle?.Hook === 'poststart' && !task.Lifecycle.Sidecar && state.State === 'dead' && !state.Failed) reasons[task.Name] = 'Unhealthy because of dead task';
  }
  const deadlinePassed = allocation.AllocUnhealthyEvents.some((event) => event.DisplayMessage === 'Task not running by deadline');
  if (deadlinePassed) {
    const at = nanosToMs((allocation.AllocUnhealthyEvents[0] as ExpectedAllocation['AllocUnhealthyEvents'][number]).Time);
    return { kind: 'verdict', healthy: false, reasons, at, toleranceMs: 500, why: 'healthy_deadline' };
  }
  return { kind: 'verdict', healthy: false, reasons, at: nomadAt, toleranceMs: 100, why: 'failure' };
}

function expectOutcome(outcome: HealthOutcome | HealthUndetermined | undefined, expectation: Expectation): void {
  switch (expectation.kind) {
    case 'none':
      expect(outcome).toBeUndefined();
      return;
    case 'stopped':
      expect(outcome).toEqual({ stopped: true, at: expect.any(Number) });
      return;
    case 'verdict': {
      expect(outcome).toEqual({ healthy: expectation.healthy, at: expect.any(Number), reasons: expectation.reasons });
      const at = (outcome as { at: number }).at;
      expect({ why: expectation.why, off: Math.abs(at - expectation.at) < expectation.toleranceMs }).toEqual({ why: expectation.why, off: true });
    }
  }
}

/** The Nomad 1.1.2 recordings, then the live tier's (live/<name>: test/fixtures/nomad-1.1.2-live). */
const scenarios = [...listScenarios(SCENARIOS_DIR), ...liveScenarios()];

describe('replay of the Nomad 1.1.2 recordings (Nomad verdicts stripped from the input)', () => {
  it('covers every recorded scenario', () => {
    expect(scenarios.length).toBeGreaterThanOrEqual(11);
  });

  it.each(scenarios)('%s: every allocation reaches the verdict Warden must reach', (name) => {
    const replay = replayScenario(name);
    const expected = (replay.scenario.expected as unknown as { allocations: ExpectedAllocation[] }).allocations;
    expect([...replay.allocations.keys()].sort()).toEqual(expected.map((allocation) => allocation.ID).sort());
    for (const allocation of expected) {
      const replayed = replay.allocations.get(allocation.ID);
      expectOutcome(replayed?.outcome, expectationFor(replay, allocation));
      // Healthy is final: nothing is judged healthy and then changes its mind.
      const states = replayed?.states ?? [];
      expect(states.slice(0, -1)).not.toContain('healthy');
      expect(replayed?.problems).toEqual([]);
    }
  });

  it.each(scenarios)('%s: judged by Nomad 1.1.2\'s own rules, every allocation reaches the verdict Nomad 1.1.2 recorded', (name) => {
    const replay = replayScenario(name, { release: '1.1.2' });
    const expected = (replay.scenario.expected as unknown as { allocations: ExpectedAllocation[] }).allocations;
    expect([...replay.allocations.keys()].sort()).toEqual(expected.map((allocation) => allocation.ID).sort());
    for (const allocation of expected) {
      const replayed = replay.allocations.get(allocation.ID);
      expectOutcome(replayed?.outcome, expectationBy112(replay, allocation));
      expect(replayed?.problems).toEqual([]);
    }
  });

  it.each(scenarios.flatMap((name) => [[name, 'today'], [name, '1.1.2']] as const))('%s: judging that starts late, at any line of the stream, reaches the same verdicts at the same times (rules: %s)', (name, rules) => {
    const release = rules === 'today' ? undefined : rules;
    // With Nomad's answer in the input: where a late start's kept history cannot decide (the 10-event
    // cap), Nomad's recorded verdict is the history (live/restart_after_healthy, live/deadline_while_restarting).
    const watched = replayScenario(name, { keepNomadVerdict: true, release });
    const full = Object.fromEntries([...watched.allocations].map(([id, allocation]) => [id, allocation.outcome ?? allocation.unwatched]));
    // Not its own judgement then: the verdict Nomad recorded, at its Timestamp, its reasons as far as its events still hold them.
    const asNomadRecorded = (judged: Record<string, unknown>) =>
      Object.fromEntries(
        Object.entries(judged).map(([id, outcome]) => {
          if (typeof outcome !== 'object' || outcome === null || !('basis' in outcome)) return [id, outcome];
          const own = full[id] as { healthy: boolean; at: number; reasons: Record<string, string> };
          const recorded = outcome as unknown as { healthy: boolean; at: number; reasons: Record<string, string> };
          expect({ id, off: Math.abs(recorded.at - own.at) < 500, reasons: Object.keys(recorded.reasons).length === 0 || recorded.reasons }).toEqual({ id, off: true, reasons: Object.keys(recorded.reasons).length === 0 || own.reasons });
          return [id, { healthy: recorded.healthy, at: own.at, reasons: own.reasons }];
        }),
      );
    const starts = [...new Set(watched.scenario.stream.filter((line) => !isHeartbeatLine(line)).map((line) => line.t))];
    let recorded = 0;
    for (const startAt of starts) {
      const late = replayScenario(name, { startAt, keepNomadVerdict: true, release });
      const judged = Object.fromEntries([...late.allocations].map(([id, allocation]) => [id, allocation.outcome ?? allocation.unwatched]));
      recorded += Object.values(judged).filter((outcome) => typeof outcome === 'object' && 'basis' in outcome).length;
      expect({ startAt, judged: asNomadRecorded(judged) }).toEqual({ startAt, judged: full });
    }
    // Only the live recordings of restarts capped away lose the history that decides.
    expect(recorded > 0).toBe(['live/restart_after_healthy', 'live/deadline_while_restarting'].includes(name));
  });

  it.each(scenarios)('%s: with Nomad\'s answer in the input, watched from the start, the same verdicts as without it (it confirms, never replaces)', (name) => {
    const outcomes = (replay: Replay) => Object.fromEntries([...replay.allocations].map(([id, allocation]) => [id, allocation.outcome ?? allocation.unwatched]));
    expect(outcomes(replayScenario(name, { keepNomadVerdict: true }))).toEqual(outcomes(replayScenario(name)));
  });

  it('deadline_not_running: the deadline counts from when Nomad began watching (the Received event), not from the placement', () => {
    const replay = replayScenario('deadline_not_running');
    const [allocation] = replay.allocations.values();
    const expected = (replay.scenario.expected as unknown as { allocations: ExpectedAllocation[] }).allocations[0] as ExpectedAllocation;
    const received = nanosToMs(expected.TaskStates_extra.main?.Events.find((event) => event.Type === 'Received')?.Time as bigint | number);
    const deadlineMs = durationMs(groupOf(replay, expected).Update?.HealthyDeadline) as number;
    expect(allocation?.outcome).toMatchObject({ healthy: false, at: received + deadlineMs });
  });

  it("deadline_not_running: judging that starts after the Received event lands within 5 ms of Nomad's deadline, before or after it passed", () => {
    const { scenario } = replayScenario('deadline_not_running');
    const [nomad] = (scenario.expected as unknown as { allocations: ExpectedAllocation[] }).allocations;
    const nomadAt = nanosToMs((nomad?.AllocUnhealthyEvents[0] as ExpectedAllocation['AllocUnhealthyEvents'][number]).Time);
    const received = nanosToMs(nomad?.TaskStates_extra.main?.Events.find((event) => event.Type === 'Received')?.Time as bigint | number);
    const starts = scenario.stream.map((line) => line.t).filter((t) => Date.parse(scenario.meta.stream_opened_at) + t > received);
    const judgedAt = new Set<number>();
    for (const startAt of starts) {
      const [late] = replayScenario('deadline_not_running', { startAt }).allocations.values();
      if (late?.firstSeen.desiredStatus !== 'run') continue;
      const at = (late.outcome as { at: number }).at;
      expect(Math.abs(at - nomadAt)).toBeLessThan(5);
      judgedAt.add(Math.sign(late.firstSeen.at - nomadAt));
    }
    // Some starts came before Nomad's deadline, some after it.
    expect([...judgedAt].sort()).toEqual([-1, 1]);
  });

  it('restart_before_min_healthy: every restart sends the allocation back to pending before min_healthy_time', () => {
    const [allocation] = replayScenario('restart_before_min_healthy').allocations.values();
    const restarts = allocation?.states.filter((state, i, all) => state === 'pending' && all[i - 1] === 'minHealthyWait').length;
    expect(restarts).toBe(2);
  });

  it('batch_job: no verdict by default, healthy once its task ran under an opt-in policy', () => {
    const [unwatched] = replayScenario('batch_job').allocations.values();
    expect(unwatched?.unwatched).toMatch(/batch/);
    const optIn: OptInHealthPolicy = { minHealthyTimeMs: 1000, healthyDeadlineMs: 60_000 };
    const replay = replayScenario('batch_job', { optIn });
    const expected = (replay.scenario.expected as unknown as { allocations: ExpectedAllocation[] }).allocations[0] as ExpectedAllocation;
    const [watched] = replay.allocations.values();
    // The start as the data times it: its Started event (StartedAt is written microseconds later).
    const started = nanosToMs(expected.TaskStates_extra.main?.Events.find((event) => event.Type === 'Started')?.Time as bigint | number);
    expect(watched?.outcome).toEqual({ healthy: true, at: started + optIn.minHealthyTimeMs, reasons: {} });
  });

  it('batch_job: a task that exits successfully before min_healthy_time is healthy at its finish under opt-in', () => {
    const optIn: OptInHealthPolicy = { minHealthyTimeMs: 30_000, healthyDeadlineMs: 60_000 };
    const replay = replayScenario('batch_job', { optIn });
    const expected = (replay.scenario.expected as unknown as { allocations: ExpectedAllocation[] }).allocations[0] as ExpectedAllocation;
    const [watched] = replay.allocations.values();
    expect(watched?.outcome).toEqual({ healthy: true, at: ms(expected.TaskStates_extra.main?.FinishedAt as string), reasons: {} });
  });
});
