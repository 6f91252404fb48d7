/**
 * One test per rule of Nomad's current health tracker (client/allochealth/tracker.go and
 * client/allocrunner/health_hook.go on Nomad's main branch), in virtual time.
 */
import { formatGoDuration } from '../../machines/allocationHealthRules.js';
import { T0, check, exited, harness, policy, running, task, view } from './support/builders.js';

describe('tasks (tracker.go watchTaskEvents)', () => {
  it('healthy min_healthy_time after the latest task start, not before', () => {
    const { clock, registry } = harness();
    registry.track('a', policy(), view({ web: task(), api: task() }, { clientStatus: 'pending' }));
    clock.advance(100);
    registry.updateAllocation('a', view({ web: running(T0 + 50), api: running(T0 + 90) }));
    clock.advanceTo(T0 + 90 + 2000 - 1);
    expect(registry.status('a')?.state).toBe('minHealthyWait');
    clock.advance(1);
    expect(registry.status('a')).toEqual({ state: 'healthy', outcome: { healthy: true, at: T0 + 2090, reasons: {} }, rejected: null });
  });

  it('the verdict time comes from StartedAt, even when the update is seen late', () => {
    const { clock, registry } = harness();
    registry.track('a', policy(), view({ web: task() }));
    clock.advance(3000);
    registry.updateAllocation('a', view({ web: running(T0 + 500) }));
    expect(registry.status('a')?.outcome).toEqual({ healthy: true, at: T0 + 2500, reasons: {} });
  });

  it('a restart moves the latest start and the window starts again', () => {
    const { clock, registry } = harness();
    registry.track('a', policy({ healthyDeadlineMs: 60_000 }), view({ web: running(T0) }));
    clock.advance(1000);
    registry.updateAllocation('a', view({ web: task({ restarts: 1 }) }));
    expect(registry.status('a')?.state).toBe('pending');
    clock.advance(500);
    registry.updateAllocation('a', view({ web: running(T0 + 1500, { restarts: 1 }) }));
    clock.advanceTo(T0 + 2000);
    expect(registry.status('a')?.state).toBe('minHealthyWait');
    clock.advanceTo(T0 + 3500);
    expect(registry.status('a')?.outcome).toEqual({ healthy: true, at: T0 + 3500, reasons: {} });
  });

  it('some tasks running, others pending: running, then minHealthyWait once all run', () => {
    const { registry, changes } = harness();
    registry.track('a', policy(), view({ web: task(), api: task() }, { clientStatus: 'pending' }));
    registry.updateAllocation('a', view({ web: running(T0), api: task() }));
    registry.updateAllocation('a', view({ web: running(T0), api: running(T0) }));
    expect(changes.filter((c) => c.type === 'transition').map((c) => c.type === 'transition' && c.to)).toEqual([
      'running',
      'minHealthyWait',
    ]);
  });

  it('a failed task is unhealthy at once, at its FinishedAt, "Unhealthy because of failed task"', () => {
    const { clock, registry } = harness();
    registry.track('a', policy(), view({ web: running(T0) }));
    clock.advance(300);
    registry.updateAllocation('a', view({ web: exited(T0, T0 + 200, { failed: true }) }, { clientStatus: 'failed' }));
    expect(registry.status('a')?.outcome).toEqual({ healthy: false, at: T0 + 200, reasons: { web: 'Unhealthy because of failed task' } });
  });

  it('a main task that finishes, even successfully, is unhealthy: "Unhealthy because of dead task"', () => {
    const { registry } = harness();
    registry.track('a', policy(), view({ web: exited(T0, T0 + 100) }, { clientStatus: 'complete' }));
    expect(registry.status('a')?.outcome).toEqual({ healthy: false, at: T0 + 100, reasons: { web: 'Unhealthy because of dead task' } });
  });

  it('a prestart task that exited 0 is fine; the main task decides', () => {
    const { clock, registry } = harness();
    const init = exited(T0, T0 + 100, { hook: 'prestart' });
    registry.track('a', policy(), view({ init, main: running(T0 + 200) }));
    clock.advanceTo(T0 + 2200);
    expect(registry.status('a')?.outcome).toEqual({ healthy: true, at: T0 + 2200, reasons: {} });
  });

  it('a prestart sidecar must keep running: its exit is a failure', () => {
    const { registry } = harness();
    const proxy = exited(T0, T0 + 100, { hook: 'prestart', sidecar: true });
    registry.track('a', policy(), view({ proxy, main: running(T0) }));
    expect(registry.status('a')?.outcome).toMatchObject({ healthy: false, reasons: { proxy: 'Unhealthy because of dead task' } });
  });

  it('a poststart task that exited 0 is skipped, and its start no longer counts (fixed since 1.1.2)', () => {
    const { clock, registry } = harness();
    registry.track('a', policy(), view({ main: running(T0), post: running(T0 + 500, { hook: 'poststart' }) }));
    clock.advanceTo(T0 + 1500);
    registry.updateAllocation('a', view({ main: running(T0), post: exited(T0 + 500, T0 + 1500, { hook: 'poststart' }) }));
    clock.advanceTo(T0 + 2000);
    expect(registry.status('a')?.outcome).toEqual({ healthy: true, at: T0 + 2000, reasons: {} });
  });

  it('a failed prestart task fails the allocation', () => {
    const { registry } = harness();
    registry.track('a', policy(), view({ init: exited(T0, T0 + 10, { hook: 'prestart', failed: true }), main: task() }));
    // TaskEvents explains every task: the main task, still pending, too.
    expect(registry.status('a')?.outcome).toEqual({
      healthy: false,
      at: T0 + 10,
      reasons: { init: 'Unhealthy because of failed task', main: 'Task not running by healthy_deadline of 5s' },
    });
  });

  it('a poststop task is not evaluated: pending, it does not block health', () => {
    const { clock, registry } = harness();
    registry.track('a', policy(), view({ main: running(T0), cleanup: task({ hook: 'poststop' }) }));
    clock.advanceTo(T0 + 2000);
    expect(registry.status('a')?.outcome).toEqual({ healthy: true, at: T0 + 2000, reasons: {} });
  });

  it('an unhealthy verdict explains a pending poststop task too, as TaskEvents does', () => {
    const { registry } = harness();
    registry.track('a', policy(), view({ main: exited(T0, T0 + 100, { failed: true }), cleanup: task({ hook: 'poststop' }) }));
    expect(registry.status('a')?.outcome).toEqual({
      healthy: false,
      at: T0 + 100,
      reasons: { main: 'Unhealthy because of failed task', cleanup: 'Task not running by healthy_deadline of 5s' },
    });
  });

  it('ClientStatus failed without a failed task: unhealthy with no per-task reason', () => {
    const { clock, registry } = harness();
    registry.track('a', policy(), view({ web: task() }, { clientStatus: 'pending' }));
    clock.advance(40);
    registry.updateAllocation('a', view({ web: task() }, { clientStatus: 'failed' }));
    expect(registry.status('a')?.outcome).toEqual({ healthy: false, at: T0 + 40, reasons: {} });
  });
});

describe('the healthy deadline (health_hook.go watchHealth, tracker.go TaskEvents)', () => {
  it('counts from when watching began; a pending task: "Task not running by healthy_deadline of 5s"', () => {
    const { clock, registry } = harness();
    clock.advance(250);
    registry.track('a', policy(), view({ web: task() }, { clientStatus: 'pending' }));
    clock.advanceTo(T0 + 5249);
    expect(registry.status('a')?.state).toBe('pending');
    clock.advance(1);
    expect(registry.status('a')?.outcome).toEqual({
      healthy: false,
      at: T0 + 5250,
      reasons: { web: 'Task not running by healthy_deadline of 5s' },
    });
  });

  it('a task started too late to run min_healthy_time by the deadline says so; one that ran long enough is not blamed', () => {
    const { clock, registry } = harness();
    registry.track('a', policy(), view({ early: running(T0), late: task() }));
    clock.advance(4000);
    registry.updateAllocation('a', view({ early: running(T0), late: running(T0 + 4000) }));
    clock.advanceTo(T0 + 5000);
    expect(registry.status('a')?.outcome).toEqual({
      healthy: false,
      at: T0 + 5000,
      reasons: { late: 'Task not running for min_healthy_time of 2s by healthy_deadline of 5s' },
    });
  });

  it('judging that starts late counts the deadline from when watching began (watchingSince), not from the first sight', () => {
    const { clock, registry } = harness();
    clock.advance(4000);
    registry.track('a', policy(), { ...view({ web: task() }, { clientStatus: 'pending' }), watchingSince: T0 });
    expect(registry.snapshot('a')?.context).toMatchObject({ deadlineAt: T0 + 5000, watchingSinceIgnored: null });
    clock.advanceTo(T0 + 4999);
    expect(registry.status('a')?.state).toBe('pending');
    clock.advance(1);
    expect(registry.status('a')?.outcome).toEqual({ healthy: false, at: T0 + 5000, reasons: { web: 'Task not running by healthy_deadline of 5s' } });
  });

  it('first seen after the deadline: unhealthy at once, explained by the task states at the deadline', () => {
    const { clock, registry } = harness();
    clock.advance(9000);
    // `first` started after the deadline (pending then); `again` restarted after it (it may have been running then).
    const seen = view({ first: running(T0 + 8000), again: running(T0 + 8000, { restarts: 1 }), early: running(T0) });
    registry.track('a', policy(), { ...seen, watchingSince: T0 });
    expect(registry.status('a')?.outcome).toEqual({
      healthy: false,
      at: T0 + 5000,
      reasons: {
        first: 'Task not running by healthy_deadline of 5s',
        again: 'Task not running for min_healthy_time of 2s by healthy_deadline of 5s',
      },
    });
  });

  it('first seen late but healthy before the deadline: healthy at the time the data gives', () => {
    const { clock, registry } = harness();
    clock.advance(60_000);
    registry.track('a', policy(), { ...view({ web: running(T0 + 2500) }), watchingSince: T0 });
    expect(registry.status('a')?.outcome).toEqual({ healthy: true, at: T0 + 4500, reasons: {} });
  });

  it.each([
    ['in the future of the clock', T0 + 1000, /after the time judging starts/],
    ['not a number', Number.NaN, /not a finite number/],
  ])('a watchingSince %s is ignored with the reason: the deadline counts from the first sight', (_case, since, reason) => {
    const { clock, registry } = harness();
    expect(() => registry.track('a', policy(), { ...view({ web: task() }), watchingSince: since })).not.toThrow();
    expect(registry.snapshot('a')?.context).toMatchObject({ deadlineAt: T0 + 5000, watchingSinceIgnored: expect.stringMatching(reason) });
    clock.advanceTo(T0 + 4999);
    expect(registry.status('a')?.state).toBe('pending');
    clock.advance(1);
    expect(registry.status('a')?.outcome).toMatchObject({ healthy: false, at: T0 + 5000 });
  });

  it('healthy exactly at the deadline still counts as healthy', () => {
    const { clock, registry } = harness();
    registry.track('a', policy(), view({ web: running(T0 + 3000) }));
    clock.advanceTo(T0 + 5000);
    expect(registry.status('a')?.outcome).toEqual({ healthy: true, at: T0 + 5000, reasons: {} });
  });

  it.each([
    [500, '500ms'],
    [5000, '5s'],
    [90_000, '1m30s'],
    [300_000, '5m0s'],
    [3_600_000, '1h0m0s'],
    [2500, '2.5s'],
  ])('durations read as Go prints them: %i ms → %s', (ms, text) => {
    expect(formatGoDuration(ms)).toBe(text);
  });
});

describe('desired status stop or evict (tracker.go markAllocStopped)', () => {
  it.each(['stop', 'evict'])('%s → stopped with no verdict, even if a task dies in the same update', (desiredStatus) => {
    const { clock, registry, changes } = harness();
    registry.track('a', policy(), view({ web: running(T0) }));
    clock.advance(700);
    registry.updateAllocation('a', view({ web: exited(T0, T0 + 650) }, { desiredStatus, clientStatus: 'complete' }));
    expect(registry.status('a')).toEqual({ state: 'stopped', outcome: { stopped: true, at: T0 + 700 }, rejected: null });
    expect(changes.at(-1)).toEqual({ type: 'outcome', allocationId: 'a', outcome: { stopped: true, at: T0 + 700 } });
    expect(clock.pending()).toBe(0);
  });
});

describe('service checks (tracker.go watchConsulEvents, evaluateConsulChecks)', () => {
  const checked = policy({ useChecks: true, healthyDeadlineMs: 60_000, expectedChecks: [check('alive'), check('ready')] });
  const passing = (name: string, status: 'passing' | 'warning' | 'critical' = 'passing') => ({ task: 'web', service: 'web', name, status });

  it('healthy only when the tasks and all checks have been healthy for min_healthy_time', () => {
    const { clock, registry } = harness();
    registry.track('a', checked, view({ web: running(T0) }));
    clock.advance(1000);
    registry.updateChecks('a', [passing('alive'), passing('ready')]);
    clock.advanceTo(T0 + 2999);
    expect(registry.status('a')?.state).toBe('minHealthyWait');
    clock.advance(1);
    expect(registry.status('a')?.outcome).toEqual({ healthy: true, at: T0 + 3000, reasons: {} });
  });

  it('checks are counted by name: a missing duplicate keeps it unhealthy', () => {
    const { clock, registry } = harness();
    const twice = policy({ ...checked, expectedChecks: [check('alive'), check('alive', { service: 'admin' })] });
    registry.track('a', twice, view({ web: running(T0) }), [passing('alive')]);
    clock.advance(10_000);
    expect(registry.status('a')?.state).toBe('running');
    registry.updateChecks('a', [passing('alive'), { ...passing('alive'), service: 'admin' }]);
    clock.advance(2000);
    expect(registry.status('a')?.state).toBe('healthy');
  });

  it('a failing check resets its window', () => {
    const { clock, registry } = harness();
    registry.track('a', checked, view({ web: running(T0) }), [passing('alive'), passing('ready')]);
    clock.advance(1500);
    registry.updateChecks('a', [passing('alive'), passing('ready', 'critical')]);
    clock.advance(100);
    registry.updateChecks('a', [passing('alive'), passing('ready')]);
    clock.advanceTo(T0 + 3599);
    expect(registry.status('a')?.state).toBe('minHealthyWait');
    clock.advance(1);
    expect(registry.status('a')?.outcome).toEqual({ healthy: true, at: T0 + 3600, reasons: {} });
  });

  it.each([
    ['warning', 'require_healthy', false],
    ['warning', 'ignore_warnings', true],
    ['critical', 'ignore_warnings', false],
    ['critical', 'ignore', true],
  ] as const)('a %s check with on_update %s counts as passing: %s', (status, onUpdate, counts) => {
    const { clock, registry } = harness();
    const tolerant = policy({ ...checked, expectedChecks: [check('alive'), check('ready', { onUpdate })] });
    registry.track('a', tolerant, view({ web: running(T0) }), [passing('alive'), passing('ready', status)]);
    clock.advance(2000);
    expect(registry.status('a')?.state).toBe(counts ? 'healthy' : 'running');
  });

  it('a task restart does not reset the checks\' timer: it fires every min_healthy_time, healthy at the first firing with the tasks healthy', () => {
    const { clock, registry } = harness();
    registry.track('a', checked, view({ web: running(T0) }), [passing('alive'), passing('ready')]);
    clock.advance(1000);
    registry.updateAllocation('a', view({ web: task({ restarts: 1 }) }));
    clock.advance(10);
    registry.updateAllocation('a', view({ web: running(T0 + 900, { restarts: 1 }) }));
    // The checks pass since T0: their timer fires at T0 + 2000 (tasks not healthy), then T0 + 4000;
    // the tasks are healthy from T0 + 2900.
    clock.advanceTo(T0 + 3999);
    expect(registry.status('a')?.state).toBe('minHealthyWait');
    clock.advanceTo(T0 + 4000);
    expect(registry.status('a')?.outcome).toEqual({ healthy: true, at: T0 + 4000, reasons: {} });
  });

  it('health_check = checks with no checks in the group judges the tasks only', () => {
    const { clock, registry } = harness();
    registry.track('a', policy({ useChecks: true }), view({ web: running(T0) }));
    clock.advance(2000);
    expect(registry.status('a')?.state).toBe('healthy');
  });

  it('task_states ignores the checks even when the group has some', () => {
    const { clock, registry } = harness();
    registry.track('a', policy({ ...checked, useChecks: false }), view({ web: running(T0) }), [passing('alive', 'critical')]);
    clock.advance(2000);
    expect(registry.status('a')?.state).toBe('healthy');
  });

  it.each([
    ['no registration', 'Service checks not registered', []],
    ['one of two', 'Only 1 out of 2 checks registered and passing', [passing('alive')]],
    ['a failing one', 'Services not healthy by deadline: web', [passing('alive'), passing('ready', 'critical')]],
  ] as const)('at the deadline, %s: "%s"', (_case, reason, checks) => {
    const { clock, registry } = harness();
    registry.track('a', checked, view({ web: running(T0) }), checks);
    clock.advance(60_000);
    expect(registry.status('a')?.outcome).toEqual({ healthy: false, at: T0 + 60_000, reasons: { web: reason } });
  });
});
