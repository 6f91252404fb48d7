/**
 * Nomad → machine adapters: which policy Nomad's client would use (health_hook.go init and
 * getHealthParams), and the compact view of an allocation, with bad input reported, never thrown.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { join } from 'node:path';
import { HealthPolicyError, allocationView, durationMs, healthPolicyFor, parseNanoTime, parseNomadTime } from '../../src/health/index.js';
import { isHeartbeatLine, readStreamRecording } from '../../src/testing/recording.js';
import { parseNomadJson } from '../../src/nomad/json.js';
import type { Allocation, EventFrame, Job, TaskGroup } from '../../src/nomad/types.js';
import { NEWEST_NOMAD_RULES } from '../../machines/nomadRules.js';

const FIXTURES = join(process.cwd(), 'test', 'fixtures', 'nomad-1.1.2');
const recordedJob = (scenario: string): Job =>
  parseNomadJson(readFileSync(join(FIXTURES, 'scenarios', scenario, 'job.json'), 'utf8')) as Job;

function withGroup(job: Job, change: (group: TaskGroup) => TaskGroup): Job {
  return { ...job, TaskGroups: (job.TaskGroups ?? []).map(change) };
}

describe('healthPolicyFor (health_hook.go)', () => {
  const job = recordedJob('healthy_task_states');

  it('in a deployment: the group update block, in milliseconds', () => {
    expect(healthPolicyFor(job, 'app', { deployment: true })).toEqual({
      watched: true,
      policy: {
        source: 'update',
        minHealthyTimeMs: 2000,
        healthyDeadlineMs: 20_000,
        useChecks: false,
        expectedChecks: [],
        completedTasksAreHealthy: false,
        rules: NEWEST_NOMAD_RULES,
        lostAfterMs: null,
      },
    });
  });

  it('in a migration: the migrate block, defaulted as Nomad does (checks, 10s, 5m)', () => {
    const bare = withGroup(job, (group) => ({ ...group, Migrate: null }));
    expect(healthPolicyFor(bare, 'app', { deployment: false, migration: true })).toMatchObject({
      watched: true,
      policy: { source: 'migrate', minHealthyTimeMs: 10_000, healthyDeadlineMs: 300_000, useChecks: true },
    });
  });

  it('health_check = manual is not watched; an opt-in policy takes over', () => {
    const manual = recordedJob('manual_health');
    expect(healthPolicyFor(manual, 'app', { deployment: true })).toEqual({ watched: false, reason: 'group app sets health manually' });
    const optIn = { minHealthyTimeMs: 1000, healthyDeadlineMs: 9000 };
    expect(healthPolicyFor(manual, 'app', { deployment: true, optIn })).toMatchObject({
      watched: true,
      policy: { source: 'opt-in', minHealthyTimeMs: 1000, healthyDeadlineMs: 9000, useChecks: false },
    });
  });

  it('batch jobs are never watched by Nomad', () => {
    expect(healthPolicyFor(recordedJob('batch_job'), 'app', { deployment: false })).toEqual({
      watched: false,
      reason: 'Nomad does not watch batch jobs',
    });
  });

  it('an update block with max_parallel 0 means no deployment health', () => {
    const none = withGroup(job, (group) => ({ ...group, Update: { ...group.Update, MaxParallel: 0 } }));
    expect(healthPolicyFor(none, 'app', { deployment: true })).toMatchObject({ watched: false });
  });

  it('neither deployment nor migration: Nomad has nothing to judge', () => {
    expect(healthPolicyFor(job, 'app', { deployment: false })).toMatchObject({ watched: false });
  });

  it('collects the group and task checks, on_update inherited from the service', () => {
    const checked = withGroup(job, (group) => ({
      ...group,
      Update: { ...group.Update, HealthCheck: 'checks' },
      Services: [{ Name: 'edge', Checks: [{ Name: 'tcp', Type: 'tcp' }] }],
      Tasks: group.Tasks.map((task) => ({
        ...task,
        Services: [{ Name: 'web', OnUpdate: 'ignore_warnings', Checks: [{ Name: 'http', Type: 'http' }, { Name: 'ready', Type: 'http', OnUpdate: 'ignore' }] }],
      })),
    }));
    const decision = healthPolicyFor(checked, 'app', { deployment: true });
    expect(decision.watched && decision.policy.expectedChecks).toEqual([
      { task: '', service: 'edge', name: 'tcp', onUpdate: 'require_healthy' },
      { task: 'main', service: 'web', name: 'http', onUpdate: 'ignore_warnings' },
      { task: 'main', service: 'web', name: 'ready', onUpdate: 'ignore' },
    ]);
    expect(decision.watched && decision.policy.useChecks).toBe(true);
  });

  it.each([
    ['an unknown health_check', (group: TaskGroup) => ({ ...group, Update: { ...group.Update, HealthCheck: 'sometimes' as never } })],
    ['a negative min_healthy_time', (group: TaskGroup) => ({ ...group, Update: { ...group.Update, MinHealthyTime: -1 } })],
    ['a string deadline', (group: TaskGroup) => ({ ...group, Update: { ...group.Update, HealthyDeadline: '5m' as never } })],
    [
      'an unknown on_update',
      (group: TaskGroup) => ({ ...group, Services: [{ Name: 's', OnUpdate: 'maybe' as never, Checks: [{ Name: 'c', Type: 'tcp' }] }] }),
    ],
  ])('%s is a HealthPolicyError', (_case, change) => {
    expect(() => healthPolicyFor(withGroup(job, change), 'app', { deployment: true })).toThrow(HealthPolicyError);
  });

  it('an unknown group or a bad opt-in policy is a HealthPolicyError', () => {
    expect(() => healthPolicyFor(job, 'nope', { deployment: true })).toThrow(HealthPolicyError);
    const batch = recordedJob('batch_job');
    expect(() => healthPolicyFor(batch, 'app', { deployment: false, optIn: { minHealthyTimeMs: 5000, healthyDeadlineMs: 5000 } })).toThrow(
      /min_healthy_time must be shorter/,
    );
    expect(() => healthPolicyFor(batch, 'app', { deployment: false, optIn: { minHealthyTimeMs: Number.NaN, healthyDeadlineMs: 5000 } })).toThrow(
      HealthPolicyError,
    );
  });
});

describe('allocationView', () => {
  const group: TaskGroup = {
    Name: 'app',
    Tasks: [
      { Name: 'init', Driver: 'raw_exec', Lifecycle: { Hook: 'prestart', Sidecar: false } },
      { Name: 'main', Driver: 'raw_exec' },
    ],
  };
  const base = { ID: 'a1', JobID: 'j', TaskGroup: 'app', ModifyIndex: 1, ClientStatus: 'running', DesiredStatus: 'run' } as const;
  const state = (overrides: object) => ({ State: 'running', Failed: false, Restarts: 0, LastRestart: null, StartedAt: null, FinishedAt: null, Events: [], ...overrides });

  it('reads the recorded allocation of the API fixture', () => {
    const exchange = JSON.parse(readFileSync(join(FIXTURES, 'api', 'get_allocation.json'), 'utf8')) as { response: { body: string } };
    const allocation = parseNomadJson(exchange.response.body) as Allocation;
    const job = allocation.Job as Job;
    const { view, problems } = allocationView(allocation, (job.TaskGroups as TaskGroup[])[0] as TaskGroup);
    expect(problems).toEqual([]);
    expect(view.clientStatus).toBe(allocation.ClientStatus);
    expect(view.tasks.main).toMatchObject({ state: 'running', failed: false, hook: null, sidecar: false, finishedAt: null });
    // Date.parse drops the digits below the millisecond; the view keeps them.
    expect(Math.floor(view.tasks.main?.startedAt as number)).toBe(Date.parse(allocation.TaskStates?.main?.StartedAt as string));
  });

  it('a task Nomad has not reported yet is pending; lifecycle comes from the group', () => {
    const { view } = allocationView({ ...base, TaskStates: {} }, group);
    expect(view.tasks).toEqual({
      init: { state: 'pending', failed: false, restarts: 0, startedAt: null, finishedAt: null, hook: 'prestart', sidecar: false },
      main: { state: 'pending', failed: false, restarts: 0, startedAt: null, finishedAt: null, hook: null, sidecar: false },
    });
  });

  it('unknown task names are ignored with a reason', () => {
    const { view, problems } = allocationView({ ...base, TaskStates: { ghost: state({}) as never } }, group);
    expect(Object.keys(view.tasks)).toEqual(['init', 'main']);
    expect(problems).toEqual(['task ghost is not in group app, ignored']);
  });

  it('unparsable times and unknown states are reported, not thrown', () => {
    const { view, problems } = allocationView(
      { ...base, TaskStates: { main: state({ State: 'exploded', StartedAt: 'yesterday', FinishedAt: 42 }) as never } },
      group,
    );
    expect(view.tasks.main).toMatchObject({ state: 'pending', startedAt: null, finishedAt: null });
    expect(problems).toHaveLength(3);
  });
});

describe('allocationView: when Nomad began watching (watchingSince, the start of the healthy deadline)', () => {
  const group: TaskGroup = { Name: 'app', Tasks: [{ Name: 'init', Driver: 'raw_exec', Lifecycle: { Hook: 'prestart', Sidecar: false } }, { Name: 'main', Driver: 'raw_exec' }] };
  const CREATED = 1_795_971_999_670_000_000n;
  const base = { ID: 'a1', JobID: 'j', TaskGroup: 'app', ModifyIndex: 1, ClientStatus: 'running', DesiredStatus: 'run', CreateTime: CREATED } as const;
  const at = (msAfterCreate: number): bigint => CREATED + BigInt(msAfterCreate * 1_000_000);
  const state = (events: { Type: string; Time: unknown }[]) =>
    ({ State: 'running', Failed: false, Restarts: 0, LastRestart: null, StartedAt: null, FinishedAt: null, Events: events }) as never;
  const createdMs = Number(CREATED / 1_000_000n);

  it('the earliest Received event of any task, wherever it sits in the lists', () => {
    const allocation = {
      ...base,
      TaskStates: {
        init: state([{ Type: 'Task Setup', Time: at(5) }, { Type: 'Received', Time: at(12) }]),
        main: state([{ Type: 'Received', Time: at(9) }, { Type: 'Started', Time: at(40) }]),
      },
    };
    expect(allocationView(allocation, group)).toMatchObject({ view: { watchingSince: createdMs + 9 }, problems: [] });
  });

  it('Received rolled out of the 10-event cap: the earliest event left', () => {
    const allocation = { ...base, TaskStates: { main: state([{ Type: 'Restarting', Time: at(3000) }, { Type: 'Started', Time: at(2000) }]) } };
    expect(allocationView(allocation, group).view.watchingSince).toBe(createdMs + 2000);
  });

  it('no task events at all: CreateTime once the client has reported the allocation', () => {
    expect(allocationView({ ...base, TaskStates: { main: state([]) } }, group).view.watchingSince).toBe(createdMs);
    expect(allocationView({ ...base, TaskStates: null }, group).view.watchingSince).toBe(createdMs);
  });

  it('updates after the first sighting can skip the estimate; the rest of the view is the same', () => {
    const allocation = { ...base, TaskStates: { main: state([{ Type: 'Received', Time: at(9) }]) } };
    const skipped = allocationView(allocation, group, { estimateWatchingSince: false });
    expect(skipped.view).not.toHaveProperty('watchingSince');
    const { watchingSince: _since, ...full } = allocationView(allocation, group).view;
    expect(skipped.view).toEqual(full);
  });

  it('a placement the client has not reported yet has no estimate (Nomad may not be watching it yet)', () => {
    const { view, problems } = allocationView({ ...base, ClientStatus: 'pending', TaskStates: null }, group);
    expect(view).not.toHaveProperty('watchingSince');
    expect(problems).toEqual([]);
  });

  it('unparsable event times and CreateTime are reported and skipped, not thrown', () => {
    const allocation = {
      ...base,
      CreateTime: 'yesterday' as never,
      TaskStates: { main: state([{ Type: 'Received', Time: 'soon' }, { Type: 'Started', Time: -5 }, { Type: 'Task Setup', Time: at(4) }]) },
    };
    expect(allocationView(allocation, group)).toMatchObject({ view: { watchingSince: createdMs + 4 } });
    expect(allocationView(allocation, group).problems).toEqual([
      'task main: event "Received" ignored, time "soon" is not a Unix time in nanoseconds',
      'task main: event "Started" ignored, time -5 is not a Unix time in nanoseconds',
    ]);
    const nothing = { ...allocation, TaskStates: { main: state([null as never, { Type: 'Received', Time: null }]) } };
    const { view, problems } = allocationView(nothing, group);
    expect(view).not.toHaveProperty('watchingSince');
    expect(problems).toEqual([
      'task main: event undefined ignored, it has no time',
      'task main: event "Received" ignored, it has no time',
      'CreateTime ignored, time "yesterday" is not a Unix time in nanoseconds',
    ]);
  });

  it('deadline_not_running: Received + healthy_deadline lands within 5 ms of Nomad\'s own "Alloc Unhealthy" event', () => {
    const dir = join(FIXTURES, 'scenarios', 'deadline_not_running');
    const job = recordedJob('deadline_not_running');
    const group = (job.TaskGroups as TaskGroup[])[0] as TaskGroup;
    const deadlineMs = durationMs(group.Update?.HealthyDeadline) as number;
    const expected = parseNomadJson(readFileSync(join(dir, 'expected.json'), 'utf8')) as {
      allocations: { ID: string; AllocUnhealthyEvents: { Time: unknown }[] }[];
    };
    const estimates = new Map<string, number>();
    for (const line of readStreamRecording(join(dir, 'stream.jsonl'))) {
      if (isHeartbeatLine(line)) continue;
      for (const event of (parseNomadJson(line.raw) as EventFrame).Events) {
        if (event.Topic !== 'Allocation') continue;
        const allocation = (event.Payload as { Allocation: Allocation }).Allocation;
        const since = allocationView(allocation, group).view.watchingSince;
        if (since !== undefined && !estimates.has(allocation.ID)) estimates.set(allocation.ID, since);
      }
    }
    for (const allocation of expected.allocations) {
      const nomadDeadline = (parseNanoTime(allocation.AllocUnhealthyEvents[0]?.Time) as { ms: number }).ms;
      const gap = nomadDeadline - ((estimates.get(allocation.ID) as number) + deadlineMs);
      // Nomad's health hook starts a moment after the client logs Received, never before.
      expect(gap).toBeGreaterThanOrEqual(0);
      expect(gap).toBeLessThan(5);
    }
  });
});

describe('parseNanoTime', () => {
  it('keeps microseconds of an exact bigint as a fraction of a millisecond', () => {
    expect(parseNanoTime(1_795_971_999_679_910_339n)).toEqual({ ok: true, ms: 1_795_971_999_679.91 });
  });

  it('reads a plain number and treats 0 and null as unknown', () => {
    expect(parseNanoTime(1_795_971_999_679_910_000)).toMatchObject({ ok: true, ms: expect.closeTo(1_795_971_999_679.91, 3) });
    expect(parseNanoTime(0)).toEqual({ ok: true, ms: null });
    expect(parseNanoTime(null)).toEqual({ ok: true, ms: null });
  });

  it.each(['1795971999679910339', -1, 1.5, -3n, {}])('refuses %p', (value) => {
    expect(parseNanoTime(value)).toMatchObject({ ok: false });
  });
});

describe('parseNomadTime', () => {
  it('keeps the sub-millisecond digits of RFC3339Nano as a fraction', () => {
    expect(parseNomadTime('2026-11-29T17:05:02.255409123Z')).toEqual({ ok: true, ms: Date.parse('2026-11-29T17:05:02.255Z') + 0.409123 });
  });

  it('honours offsets and short fractions', () => {
    expect(parseNomadTime('2026-11-29T18:05:02.5+01:00')).toEqual({ ok: true, ms: Date.parse('2026-11-29T17:05:02.500Z') });
  });

  it('reads null and Go zero time as unknown', () => {
    expect(parseNomadTime(null)).toEqual({ ok: true, ms: null });
    expect(parseNomadTime('0001-01-01T00:00:00Z')).toEqual({ ok: true, ms: null });
  });

  it.each(['', 'now', '2026-13-45T99:00:00Z', '2026-11-29 17:05:02Z', 17])('refuses %p', (value) => {
    expect(parseNomadTime(value)).toMatchObject({ ok: false });
  });

  it.each(['1000-01-01T00:00:00Z', '1600-02-29T12:00:00Z', '1900-03-01T00:00:00Z', '2024-02-29T23:59:59.999999999Z', '2026-04-31T00:00:00Z', '2100-02-28T00:00:00Z', '9999-12-31T23:59:59Z'])(
    'counts the days of %s as Date.parse does (leap years, a day past the month end)',
    (value) => {
      expect(parseNomadTime(value)).toEqual({ ok: true, ms: Date.parse(value.replace(/\.\d+Z$/, 'Z')) + (value.includes('.') ? 999.999999 : 0) });
    },
  );

  it('reads the form Nomad writes (read without Date.parse) exactly as RFC3339 through Date.parse reads it', () => {
    // The definition: the whole seconds through Date.parse, the fraction as the decimal it is.
    const RFC3339 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;
    const reference = (text: string): number | undefined => {
      const match = RFC3339.exec(text);
      const whole = match === null ? Number.NaN : Date.parse(`${match[1]}${match[3]}`);
      return match === null || Number.isNaN(whole) ? undefined : whole + Number(`0.${match[2] ?? '0'}`) * 1000;
    };
    const field = (digits: number, max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(digits, '0'));
    const text = fc
      .tuple(field(4, 9999), field(2, 19), field(2, 39), field(2, 29), field(2, 69), field(2, 69), fc.option(fc.stringMatching(/^[0-9]{0,11}$/), { nil: undefined }), fc.constantFrom('Z', 'Z', '+01:00', 'z'))
      .map(([y, mo, d, h, mi, sec, fraction, zone]) => `${y}-${mo}-${d}T${h}:${mi}:${sec}${fraction === undefined ? '' : `.${fraction}`}${zone}`);
    fc.assert(
      fc.property(text, (value) => {
        const parsed = parseNomadTime(value);
        if (/^0001-01-01T00:00:00(?:\.0+)?Z$/.test(value)) return expect(parsed).toEqual({ ok: true, ms: null });
        const expected = reference(value);
        expect(parsed).toEqual(expected === undefined ? { ok: false, problem: expect.any(String) } : { ok: true, ms: expected });
      }),
      { numRuns: 20_000 },
    );
  });
});
