/**
 * The embedding API over FakeNomad: verdict(), waitForDeployment() for a supervisor that starts
 * after the deployment, monitorEvaluation() as a child actor, runner callbacks, stop(), and bad
 * input that is reported and skipped while the supervisor keeps judging.
 */
import { isHeartbeatLine, type RecordedLine } from '../../src/testing/recording.js';
import type { AnyActorRef } from 'xstate';
import { VirtualClock } from '../../src/clock/index.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { AllocationNotJudgedError, SupervisorScopeError, SupervisorStoppedError, createSupervisor } from '../../src/supervisor/index.js';
import { evaluationActorId } from '../../machines/supervisor.js';
import { driveTo, loadScenario, requestedIndex, startHarness, stripNomadVerdict } from './support/harness.js';

function dataLines(lines: readonly RecordedLine[], until = Infinity): RecordedLine[] {
  return lines.filter((line) => !isHeartbeatLine(line) && line.t <= until);
}

describe('the supervisor API', () => {
  test('verdict() answers from the history, or when the verdict is reached', async () => {
    const scenario = loadScenario('healthy_task_states');
    const harness = await startHarness(scenario.opened);
    try {
      harness.fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
      await driveTo(harness.clock, scenario.opened + 1_000);
      const ids = [...new Set(harness.changes.map((c) => c.alloc.allocId))];
      expect(ids).toHaveLength(2);
      const pending = harness.supervisor.verdict(ids[0]!);
      await driveTo(harness.clock, scenario.closed);
      const record = await pending;
      expect(record.outcome).toMatchObject({ healthy: true, reasons: {} });
      await expect(harness.supervisor.verdict(ids[1]!)).resolves.toMatchObject({ alloc: { allocId: ids[1], jobId: 'healthy-task-states' } });
    } finally {
      await harness.close();
    }
  });

  test('verdict() of an allocation no policy judges rejects with the reason', async () => {
    const scenario = loadScenario('batch_job');
    const harness = await startHarness(scenario.opened);
    try {
      harness.fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
      await driveTo(harness.clock, scenario.opened + 200);
      const [alloc] = harness.fake.cluster.listAllocations({ jobId: 'batch-job' }) as { ID: string }[];
      const error = await harness.supervisor.verdict(alloc!.ID).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AllocationNotJudgedError);
      expect((error as Error).message).toBe(`allocation ${alloc!.ID} is not judged: Nomad does not watch batch jobs`);
    } finally {
      await harness.close();
    }
  });

  test('waitForDeployment() started after the allocations became healthy lists first and succeeds', async () => {
    const scenario = loadScenario('healthy_task_states');
    // Everything up to just before the purge has happened when the supervisor starts.
    const purge = scenario.meta.actions.find((a) => a.action.startsWith('DELETE'))!.t;
    const harness = await startHarness(scenario.opened + purge - 10, {}, (fake) =>
      fake.replay(dataLines(scenario.stream, purge - 10), { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario), immediate: true }),
    );
    try {
      const result = harness.supervisor.waitForDeployment('healthy-task-states');
      await driveTo(harness.clock, harness.clock.now() + 1_000);
      await expect(result).resolves.toMatchObject({ ok: true, jobId: 'healthy-task-states', version: 0 });
      expect((await result).ok && (await result as { healthy: string[] }).healthy).toHaveLength(2);
    } finally {
      await harness.close();
    }
  });

  test('monitorEvaluation(): placement_failure names group app, memory and the blocked evaluation', async () => {
    const scenario = loadScenario('placement_failure');
    const harness = await startHarness(scenario.opened);
    try {
      harness.fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
      await driveTo(harness.clock, scenario.opened + 12);
      const registration = harness.fake.cluster.listEvaluations({ jobId: 'placement-failure' }).find((e) => e.TriggeredBy === 'job-register')!;
      const outcome = harness.supervisor.monitorEvaluation(registration.ID);
      expect(harness.supervisor.actor.system.get(evaluationActorId(registration.ID))).toBeDefined();
      await driveTo(harness.clock, scenario.opened + 1_000);
      const result = await outcome;
      expect(result.ok).toBe(false);
      if (result.ok) return;
      expect(result.failures.map((f) => [f.group, f.metrics.DimensionExhausted])).toEqual([['app', { memory: 1 }]]);
      expect(result.blockedEval).toMatch(/^[0-9a-f-]{36}$/);
      expect(result.message).toContain('Dimension "memory" exhausted on 1 nodes');
    } finally {
      await harness.close();
    }
  });

  test('runner callbacks over the live stream: onNew once per runner, onDeleted at the stop', async () => {
    const scenario = loadScenario('rolling_update');
    const harness = await startHarness(scenario.opened);
    const calls: string[] = [];
    harness.supervisor.watchRunners({
      onNew: (alloc, startupMs) => calls.push(`new ${alloc.ID} ${startupMs > 0}`),
      onDeleted: (alloc) => calls.push(`deleted ${alloc.ID}`),
      onFailed: (alloc, message) => calls.push(`failed ${alloc.ID} ${message}`),
    });
    try {
      harness.fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
      await driveTo(harness.clock, scenario.closed + 1_000);
      const news = calls.filter((c) => c.startsWith('new'));
      expect(news).toHaveLength(6);
      expect(news.every((c) => c.endsWith('true'))).toBe(true);
      expect(calls.filter((c) => c.startsWith('deleted'))).toHaveLength(6);
      expect(calls.filter((c) => c.startsWith('failed'))).toEqual([]);
    } finally {
      await harness.close();
    }
  });

  test('stop() ends every child, fails pending waits and closes every socket it opened', async () => {
    const clock = new VirtualClock({ start: Date.UTC(2026, 10, 29, 17) });
    const fake = await FakeNomad.start({ clock });
    const supervisor = createSupervisor({ nomad: { address: fake.address }, clock });
    try {
      await driveTo(clock, clock.now() + 100);
      const waiting = supervisor.verdict('never-seen');
      const deployment = supervisor.waitForDeployment('web', { version: 0 });
      const evaluation = supervisor.monitorEvaluation('no-such-eval-yet');
      const child = supervisor.actor.system.get(evaluationActorId('no-such-eval-yet')) as AnyActorRef;
      const connections = () => new Promise<number>((resolve) => fake.server.getConnections((_e, n) => resolve(n)));
      expect(await connections()).toBeGreaterThan(0);
      const rejected = Promise.all([waiting, deployment, evaluation].map((wait) => expect(wait).rejects.toBeInstanceOf(SupervisorStoppedError)));
      await supervisor.stop();
      await rejected;
      expect(supervisor.actor.getSnapshot().status).toBe('done');
      expect(child.getSnapshot().status).toBe('stopped');
      await driveTo(clock, clock.now() + 100);
      expect(await connections()).toBe(0);
    } finally {
      await fake.close();
    }
  });

  test('bad input is reported and skipped; unknown topics are ignored; the supervisor keeps judging', async () => {
    const scenario = loadScenario('failed_task');
    const harness = await startHarness(scenario.opened);
    try {
      const publish = (Index: number, Events: object[]) => harness.fake.broker.publish({ Index, Events: Events as never });
      publish(30, [{ Topic: 'Node', Type: 'NodeRegistration', Key: 'n1', Namespace: '', FilterKeys: null, Index: 30, Payload: { Node: { ID: 'n1' } } }]);
      publish(31, [{ Topic: 'Allocation', Type: 'AllocationUpdated', Key: 'x', Namespace: 'default', FilterKeys: [], Index: 31, Payload: { Allocation: { ID: 'x', ModifyIndex: 31 } } }]);
      publish(32, [
        {
          Topic: 'Allocation', Type: 'PlanResult', Key: 'orphan', Namespace: 'default', FilterKeys: ['ghost-job'], Index: 32,
          Payload: { Allocation: { ID: 'orphan', JobID: 'ghost-job', TaskGroup: 'app', ClientStatus: 'pending', DesiredStatus: 'run', ModifyIndex: 32 } },
        },
      ]);
      await driveTo(harness.clock, harness.clock.now() + 500);
      // The same orphan updated after its lookup failed: tried again, not reported again.
      publish(33, [
        {
          Topic: 'Allocation', Type: 'AllocationUpdated', Key: 'orphan', Namespace: 'default', FilterKeys: ['ghost-job'], Index: 33,
          Payload: { Allocation: { ID: 'orphan', JobID: 'ghost-job', TaskGroup: 'app', ClientStatus: 'running', DesiredStatus: 'run', ModifyIndex: 33 } },
        },
      ]);
      publish(34, [{ Topic: 'Evaluation', Type: 'EvaluationUpdated', Key: 'e', Namespace: 'default', FilterKeys: [], Index: 34, Payload: { Evaluation: 'not an object' } }]);
      await driveTo(harness.clock, harness.clock.now() + 500);
      // Job lookups are asynchronous: compare without order.
      expect(harness.problems.map((p) => `${p.kind} ${p.index ?? p.allocId}`).sort()).toEqual([
        'bad-payload 31',
        'bad-payload 34',
        'job-unavailable orphan',
      ]);
      expect(harness.problems.find((p) => p.kind === 'job-unavailable')!.message).toContain('job not found');
      // Still judging: the recorded failing task reaches its verdict.
      harness.fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
      await driveTo(harness.clock, scenario.closed + 1_000);
      expect(harness.verdicts.map((v) => v.outcome)).toEqual([
        expect.objectContaining({ healthy: false, reasons: { main: 'Unhealthy because of failed task' } }),
      ]);
    } finally {
      await harness.close();
    }
  });
});

describe('scope', () => {
  test('only allocations of jobs in scope are judged; evaluations are followed on request whatever the scope', async () => {
    const scenario = loadScenario('placement_failure');
    const harness = await startHarness(scenario.opened, { scope: { jobPrefixes: ['rolling-'] } });
    try {
      await expect(harness.supervisor.waitForDeployment('placement-failure', { version: 0 })).rejects.toBeInstanceOf(SupervisorScopeError);
      harness.fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
      await driveTo(harness.clock, scenario.opened + 12);
      const registration = harness.fake.cluster.listEvaluations({ jobId: 'placement-failure' }).find((e) => e.TriggeredBy === 'job-register')!;
      const outcome = harness.supervisor.monitorEvaluation(registration.ID);
      await driveTo(harness.clock, scenario.opened + 1_000);
      await expect(outcome).resolves.toMatchObject({ ok: false, failures: [{ group: 'app' }] });
    } finally {
      await harness.close();
    }
  });

  test('a job prefix keeps other jobs out', async () => {
    const scenario = loadScenario('healthy_task_states');
    const harness = await startHarness(scenario.opened, { scope: { jobPrefixes: ['rolling-'] } });
    try {
      harness.fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
      await driveTo(harness.clock, scenario.closed);
      expect([harness.verdicts, harness.changes]).toEqual([[], []]);
    } finally {
      await harness.close();
    }
  });
});

describe('logging', () => {
  test.each([
    ['the right token', 'tok-right-0001'],
    ['a refused token', 'tok-wrong-0002'],
  ])('with %s, the structured log tells what happened and never carries the token', async (_case, token) => {
    const scenario = loadScenario('failed_task');
    const clock = new VirtualClock({ start: scenario.opened });
    const fake = await FakeNomad.start({ clock, token: 'tok-right-0001' });
    const records: unknown[] = [];
    const record = (level: string) => (fields: object, message: string) => records.push({ level, message, ...fields });
    const logger = { debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error') };
    const supervisor = createSupervisor({ nomad: { address: fake.address, token }, clock, logger });
    const problems: string[] = [];
    supervisor.problems$.subscribe((p) => problems.push(p.kind));
    try {
      fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
      await driveTo(clock, scenario.opened + 5_000);
      const text = JSON.stringify(records);
      expect(text).not.toContain('tok-');
      if (token === 'tok-right-0001') expect(records).toContainEqual(expect.objectContaining({ level: 'info', message: 'event stream connected' }));
      else expect(problems).toContain('stream-failed');
    } finally {
      await supervisor.stop();
      await fake.close();
    }
  });
});
