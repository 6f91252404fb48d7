/**
 * DeploymentWatch alone, on a VirtualClock: where the progress deadline comes from (Nomad's
 * RequireProgressBy only where it moves for reasons other than health, Warden's healthy verdicts
 * otherwise), several groups, a pause, and no timer left behind.
 */
import { VirtualClock } from '../../src/clock/index.js';
import type { Deployment, DeploymentState } from '../../src/nomad/types.js';
import { DeploymentWatch, type DeploymentResult } from '../../src/deployments/deploymentWatch.js';

const START = Date.UTC(2026, 10, 29, 18);
const iso = (ms: number): string => new Date(ms).toISOString();

function group(fields: Partial<DeploymentState> = {}): DeploymentState {
  return {
    AutoRevert: false,
    AutoPromote: false,
    ProgressDeadline: 30e9,
    RequireProgressBy: iso(START + 30_000),
    Promoted: false,
    PlacedCanaries: null,
    DesiredCanaries: 0,
    DesiredTotal: 1,
    PlacedAllocs: 1,
    HealthyAllocs: 0,
    UnhealthyAllocs: 0,
    ...fields,
  };
}

function deployment(modifyIndex: number, groups: Record<string, DeploymentState>, status: Deployment['Status'] = 'running'): Deployment {
  return {
    ID: 'd1',
    Namespace: 'default',
    JobID: 'web',
    JobVersion: 0,
    JobModifyIndex: 10,
    JobCreateIndex: 5,
    TaskGroups: groups,
    Status: status,
    StatusDescription: status === 'paused' ? 'Deployment is paused' : 'Deployment is running',
    CreateIndex: 11,
    ModifyIndex: modifyIndex,
  };
}

function watching(): { clock: VirtualClock; watch: DeploymentWatch; settled: DeploymentResult[] } {
  const clock = new VirtualClock({ start: START });
  const settled: DeploymentResult[] = [];
  const watch = new DeploymentWatch('web', 'default', 0, { clock, onSettled: (result) => settled.push(result) });
  return { clock, watch, settled };
}

const failed = { healthy: false, reasons: { main: 'Unhealthy because of failed task' } };

describe('DeploymentWatch progress deadline', () => {
  test('Nomad moving RequireProgressBy for its own healthy allocation is not followed: Warden judged none healthy', () => {
    const { clock, watch, settled } = watching();
    watch.onDeployment(deployment(12, { app: group() }));
    watch.onVerdict('a1', 'd1', 'web.app[0]', { ...failed, at: START + 1_000 });
    // Nomad counted an allocation healthy and pushed its deadline to +45 s.
    watch.onDeployment(deployment(13, { app: group({ HealthyAllocs: 1, RequireProgressBy: iso(START + 45_000) }) }));
    clock.advanceTo(START + 30_000);
    expect(settled).toMatchObject([{ ok: false, rule: 'progress-deadline', unhealthy: [{ allocId: 'a1' }] }]);
    expect(watch.settled).toBe(settled[0]);
  });

  test('a promotion resets the deadline (HealthyAllocs unchanged): the new RequireProgressBy is followed', () => {
    const { clock, watch, settled } = watching();
    const canaries = { DesiredCanaries: 1, DesiredTotal: 2, AutoPromote: true };
    watch.onDeployment(deployment(12, { app: group(canaries) }));
    watch.onVerdict('c1', 'd1', 'web.app[0]', { healthy: true, at: START + 3_000, reasons: {} });
    watch.onDeployment(deployment(13, { app: group({ ...canaries, HealthyAllocs: 1, RequireProgressBy: iso(START + 33_000) }) }));
    clock.advanceTo(START + 20_000);
    watch.onDeployment(deployment(14, { app: group({ ...canaries, HealthyAllocs: 1, Promoted: true, RequireProgressBy: iso(START + 50_000) }) }));
    clock.advanceTo(START + 49_999);
    expect(settled).toEqual([]);
    clock.advanceTo(START + 50_000);
    expect(settled).toMatchObject([{ ok: false, rule: 'progress-deadline', reason: `no progress; Failed due to progress deadline: group "app" had 1 of 2 allocations healthy by ${iso(START + 50_000)}` }]);
  });

  test('several groups: a done group no longer counts; the short one names itself, from allocation names', () => {
    const { clock, watch, settled } = watching();
    watch.onDeployment(deployment(12, { app: group(), db: group({ RequireProgressBy: iso(START + 10_000) }) }));
    watch.onVerdict('db1', 'd1', 'web.db[0]', { healthy: true, at: START + 2_000, reasons: {} });
    clock.advanceTo(START + 29_999);
    expect(settled).toEqual([]);
    clock.advanceTo(START + 30_000);
    expect(settled).toMatchObject([{ ok: false, reason: `no progress; Failed due to progress deadline: group "app" had 0 of 1 allocation healthy by ${iso(START + 30_000)}` }]);
  });

  test('a deployment paused at its deadline does not fail; news after the resume judges again', () => {
    const { clock, watch, settled } = watching();
    watch.onDeployment(deployment(12, { app: group() }, 'paused'));
    clock.advanceTo(START + 40_000);
    expect(settled).toEqual([]);
    // The resume moves RequireProgressBy to now + 30 s.
    watch.onDeployment(deployment(13, { app: group({ RequireProgressBy: iso(START + 70_000) }) }));
    clock.advanceTo(START + 69_999);
    expect(settled).toEqual([]);
    clock.advanceTo(START + 70_000);
    expect(settled).toMatchObject([{ ok: false, rule: 'progress-deadline' }]);
  });

  test('a deadline already past when the deployment is first seen fails on the next tick', () => {
    const { clock, watch, settled } = watching();
    clock.advanceTo(START + 35_000);
    expect(watch.onDeployment(deployment(12, { app: group() }))).toBeUndefined();
    clock.advance(0);
    clock.runUntilIdle();
    expect(settled).toMatchObject([{ ok: false, rule: 'progress-deadline' }]);
  });

  test('no deadline until Nomad sets one; success, failure and close() leave no timer', () => {
    const { clock, watch } = watching();
    watch.onDeployment(deployment(12, { app: group({ RequireProgressBy: null, PlacedAllocs: 0 }) }));
    expect(clock.pending()).toBe(0);
    watch.onDeployment(deployment(13, { app: group() }));
    expect(clock.pending()).toBe(1);
    expect(watch.onVerdict('a1', 'd1', 'web.app[0]', { healthy: true, at: START + 2_000, reasons: {} })).toMatchObject({ ok: true, healthy: ['a1'] });
    expect(clock.pending()).toBe(0);

    const other = watching();
    other.watch.onDeployment(deployment(12, { app: group() }));
    other.watch.close();
    expect(other.clock.pending()).toBe(0);
    other.watch.onDeployment(deployment(13, { app: group() }, 'failed'));
    expect(other.clock.pending()).toBe(0);
  });

  test('reschedule attempts: the slot\'s earlier failures within the interval count; the last allowed one waits for the deadline', () => {
    const clock = new VirtualClock({ start: START });
    const policy = { Attempts: 2, Interval: 60e9, Unlimited: false };
    const watch = new DeploymentWatch('web', 'default', 0, { clock, reschedulePolicies: { app: policy } });
    watch.onDeployment(deployment(12, { app: group({ DesiredTotal: 2 }) }));
    expect(watch.onVerdict('a1', 'd1', 'web.app[0]', { ...failed, at: START + 1_000 })).toBeUndefined();
    // Another slot, and the first slot's failure more than the interval before: neither counts.
    expect(watch.onVerdict('b1', 'd1', 'web.app[1]', { ...failed, at: START + 2_000 })).toBeUndefined();
    expect(watch.onVerdict('a2', 'd1', 'web.app[0]', { ...failed, at: START + 62_000 })).toBeUndefined();
    expect(watch.onVerdict('a3', 'd1', 'web.app[0]', { ...failed, at: START + 63_000 })).toBeUndefined();
    expect(watch.onVerdict('a4', 'd1', 'web.app[0]', { ...failed, at: START + 64_000 })).toMatchObject({
      ok: false,
      rule: 'reschedule-exhausted',
      reason: '5 allocations unhealthy; Failed due to unhealthy allocations: no reschedule attempt left for web.app[0]',
    });
  });

  test('bad deployment fields: an unreadable ProgressDeadline or RequireProgressBy neither fails at once nor times a deadline', () => {
    const { clock, watch, settled } = watching();
    const bad = group({ ProgressDeadline: 'soon' as unknown as number, RequireProgressBy: 'tomorrow' });
    expect(watch.onDeployment(deployment(12, { app: bad }))).toBeUndefined();
    expect(watch.onVerdict('a1', 'd1', 'web.app[0]', { ...failed, at: START + 1_000 })).toBeUndefined();
    expect(clock.pending()).toBe(0);
    expect(watch.onVerdict('a2', 'd1', 'web.app[1]', { healthy: true, at: START + 5_000, reasons: {} })).toMatchObject({ ok: true });
    expect(settled).toEqual([]);
  });

  test('without a clock nothing is timed: only updates settle it', () => {
    const watch = new DeploymentWatch('web', 'default', 0);
    watch.onDeployment(deployment(12, { app: group() }));
    expect(watch.onVerdict('a1', 'd1', 'web.app[0]', { ...failed, at: START + 1_000 })).toBeUndefined();
    expect(watch.onVerdict('a2', 'd1', 'web.app[1]', { healthy: true, at: START + 5_000, reasons: {} })).toMatchObject({ ok: true, healthy: ['a2'] });
  });
});
