/**
 * allocationHistory: the views Nomad's client saw, rebuilt from an allocation's own task events, and
 * what the data cannot tell (a pending stop, events lost to Nomad's cap of 10 per task).
 */
import { allocationHistory, judgeSight } from '../../src/health/index.js';
import type { Allocation, TaskGroup } from '../../src/nomad/types.js';
import { T0, harness, policy } from './support/builders.js';

const T = T0;
const nanos = (ms: number): bigint => BigInt(ms) * 1_000_000n;
const iso = (ms: number): string => new Date(ms).toISOString();

const GROUP = { Name: 'app', Tasks: [{ Name: 'main' }] } as unknown as TaskGroup;

type EventSpec = readonly [type: string, at: number, failsTask?: boolean];

function alloc(events: readonly EventSpec[], fields: Partial<Allocation> = {}, state: Record<string, unknown> = {}): Allocation {
  const lastStart = [...events].reverse().find(([type]) => type === 'Started')?.[1];
  return {
    ID: 'a1', Name: 'web.app[0]', JobID: 'web', TaskGroup: 'app', DesiredStatus: 'run', ClientStatus: 'running',
    CreateIndex: 10, ModifyIndex: 20, AllocModifyIndex: 10, CreateTime: nanos(T - 100), ModifyTime: nanos(T + 50_000),
    TaskStates: {
      main: {
        State: 'running', Failed: false, Restarts: events.filter(([type]) => type === 'Restarting').length, LastRestart: null,
        StartedAt: lastStart === undefined ? null : iso(T + lastStart), FinishedAt: null,
        Events: events.map(([type, at, failsTask]) => ({ Type: type, Time: nanos(T + at), ...(failsTask ? { FailsTask: true } : {}) })),
        ...state,
      },
    },
    ...fields,
  } as unknown as Allocation;
}

const brief = (history: ReturnType<typeof allocationHistory>) =>
  history.views.map(({ at, view }) => {
    const task = view.tasks.main!;
    return [at - T, view.desiredStatus, task.state, task.failed, task.restarts, task.startedAt === null ? null : task.startedAt - T];
  });

describe('allocationHistory', () => {
  test('each event at its time: started, restarted, running again; starts from the Started events', () => {
    const history = allocationHistory(
      alloc([
        ['Received', 0],
        ['Task Setup', 5],
        ['Started', 100],
        ['Terminated', 1_100],
        ['Restarting', 1_120],
        ['Started', 2_300],
      ]),
      GROUP,
    );
    expect(brief(history)).toEqual([
      [0, 'run', 'pending', false, 0, null],
      [100, 'run', 'running', false, 0, 100],
      [1_120, 'run', 'pending', false, 1, 100],
      [2_300, 'run', 'running', false, 1, 2_300],
    ]);
    expect(history).toMatchObject({ asOf: T + 2_300, watchingSince: T, pendingStop: undefined, undetermined: undefined, problems: [] });
  });

  test('a last death has no event of its own: FinishedAt times it, failed as the state says', () => {
    const history = allocationHistory(
      alloc([['Received', 0], ['Started', 100], ['Terminated', 900], ['Not Restarting', 910, true]], { ClientStatus: 'failed' }, { State: 'dead', Failed: true, FinishedAt: iso(T + 912) }),
      GROUP,
    );
    expect(brief(history).slice(-2)).toEqual([
      [910, 'run', 'dead', true, 0, 100],
      [912, 'run', 'dead', true, 0, 100],
    ]);
    expect(history.views.at(-1)?.view.clientStatus).toBe('failed');
    expect(history.asOf).toBe(T + 912);
  });

  test('a desired stop counts from the client\'s Killing; without it yet, the stop is pending at the server\'s write', () => {
    const killed = allocationHistory(
      alloc([['Received', 0], ['Started', 100], ['Killing', 30_000], ['Killed', 30_010]], { DesiredStatus: 'stop', ClientStatus: 'complete' }, { State: 'dead', FinishedAt: iso(T + 30_011) }),
      GROUP,
    );
    expect(brief(killed).map(([at, desired]) => [at, desired])).toEqual([[0, 'run'], [100, 'run'], [30_000, 'stop'], [30_010, 'stop'], [30_011, 'stop']]);
    expect(killed.pendingStop).toBeUndefined();
    // The server's write, before its client acted on it: AllocModifyIndex = ModifyIndex, ModifyTime is the write's.
    const written = allocationHistory(
      alloc([['Received', 0], ['Started', 100]], { DesiredStatus: 'stop', AllocModifyIndex: 30, ModifyIndex: 30, ModifyTime: nanos(T + 25_000) }),
      GROUP,
    );
    expect(written.views.every(({ view }) => view.desiredStatus === 'run')).toBe(true);
    expect(written.pendingStop).toBe(T + 25_000);
  });

  test('a later sight picks up after the view last fed: only what happened since', () => {
    const first = allocationHistory(alloc([['Received', 0], ['Started', 100]]), GROUP);
    const base = first.views.at(-1)!;
    const next = allocationHistory(alloc([['Received', 0], ['Started', 100], ['Terminated', 5_000], ['Restarting', 5_010]], {}, { State: 'pending' }), GROUP, { base });
    expect(brief(next)).toEqual([[5_010, 'run', 'pending', false, 1, 100]]);
    expect(next.watchingSince).toBeUndefined();
  });

  test('its client has not reported it: no view, no time the data speaks for', () => {
    const history = allocationHistory(alloc([], { ClientStatus: 'pending', TaskStates: {} } as Partial<Allocation>), GROUP);
    expect(history).toMatchObject({ views: [], asOf: null, watchingSince: undefined });
  });

  describe('events lost to Nomad\'s cap of 10 per task', () => {
    // Runs of 1 s, restarted each time: the first kept event is a Started that is not the first start.
    const flapping = (from: number): EventSpec[] => [
      ['Started', from],
      ['Terminated', from + 1_000],
      ['Restarting', from + 1_010],
      ['Started', from + 2_000],
      ['Terminated', from + 3_000],
      ['Restarting', from + 3_010],
      ['Started', from + 4_000],
    ];

    test('lost only before anything ran (no start among them): decided as usual', () => {
      const history = allocationHistory(alloc([['Task Setup', 5], ['Started', 100]]), GROUP, { minHealthyTimeMs: 2_000 });
      expect(history.undetermined).toBeUndefined();
    });

    test('lost runs too short to have been healthy, as the allocation\'s creation tells: decided as usual', () => {
      const events = flapping(1_500);
      const history = allocationHistory(alloc(events, {}, { Restarts: 3 }), GROUP, { minHealthyTimeMs: 3_000 });
      expect(history.undetermined).toBeUndefined();
    });

    test('lost runs that could have been healthy: undetermined, saying where the kept history begins', () => {
      const events = flapping(60_000);
      const history = allocationHistory(alloc(events, {}, { Restarts: 5 }), GROUP, { minHealthyTimeMs: 3_000 });
      expect(history.undetermined).toEqual({
        at: T + 60_000,
        reason: `Nomad keeps only the last 10 events of a task, and task main's events before ${iso(T + 60_000)} are gone: whether the allocation was healthy before then cannot be told from its history`,
      });
      // Reported as the verdict, with the reason: no machine is started.
      const { registry } = harness();
      expect(judgeSight(registry, alloc(events, {}, { Restarts: 5 }), GROUP, policy({ minHealthyTimeMs: 3_000 }))).toMatchObject({
        kind: 'undetermined',
        outcome: { undetermined: true, at: T + 60_000 },
      });
      expect(registry.size).toBe(0);
    });

    test('watched from before the loss, the same allocation is judged: what was fed before stands for what is gone', () => {
      const { registry } = harness();
      const watching = policy({ minHealthyTimeMs: 3_000, healthyDeadlineMs: 300_000 });
      expect(judgeSight(registry, alloc([['Received', 0], ['Started', 100]]), GROUP, watching).kind).toBe('judging');
      // Later, with its oldest events gone (a restart loop), first kept event a late start: judged on, not undetermined.
      const later = alloc(flapping(60_000), {}, { Restarts: 5 });
      expect(judgeSight(registry, later, GROUP, watching).kind).toBe('judging');
      expect(registry.status('a1')).toMatchObject({ state: 'healthy', outcome: { healthy: true, at: T + 3_100 } });
    });
  });
});
