/**
 * Health semantics against newer Nomads (nomad-protocol §10): ClientStatus `unknown` (1.3+, a
 * disconnected client) is neither bad input nor a failure (client/allochealth/tracker.go fails an
 * allocation only on ClientStatus `failed`): its client's tracker goes on, so nothing time alone
 * decides is said until the client reports again; a system job gets the default update strategy in
 * a deployment (1.11+), judged as a service job's, and is not watched before.
 */
import { allocationView, healthPolicyFor } from '../../src/health/index.js';
import type { Allocation, Job, TaskGroup } from '../../src/nomad/types.js';
import { T0, harness, policy, running, task, view } from './support/builders.js';
import { nomadRulesFor } from '../../machines/nomadRules.js';

const group: TaskGroup = { Name: 'app', Tasks: [{ Name: 'web' }] } as TaskGroup;

describe('ClientStatus unknown (disconnected client, Nomad 1.3+)', () => {
  it('is read as it is, with no problem reported', () => {
    const allocation = {
      ID: 'a', JobID: 'web', TaskGroup: 'app', ClientStatus: 'unknown', DesiredStatus: 'run', ModifyIndex: 9,
      TaskStates: { web: { State: 'running', Failed: false, Restarts: 0, StartedAt: '2026-11-29T17:00:00Z', FinishedAt: null, Events: [] } },
    } as unknown as Allocation;
    const { view: seen, problems } = allocationView(allocation, group);
    expect(problems).toEqual([]);
    expect(seen.clientStatus).toBe('unknown');
    expect(seen.tasks.web).toMatchObject({ state: 'running', failed: false });
  });

  it('holds what time alone would decide: disconnected, no verdict at min_healthy_time; healthy once the client reports again', () => {
    const { clock, registry, changes } = harness();
    registry.track('a', policy(), view({ web: running(T0) }));
    clock.advance(1000);
    registry.updateAllocation('a', view({ web: running(T0) }, { clientStatus: 'unknown' }));
    expect(registry.status('a')?.state).toBe('disconnected');
    expect(registry.machine('a')?.context.disconnectedAt).toBe(T0 + 1000);
    clock.advance(60_000);
    expect(changes.filter((c) => c.type === 'outcome')).toEqual([]);
    // Its client ran the task all along: healthy at the time its data gives.
    registry.updateAllocation('a', view({ web: running(T0) }));
    expect(changes.at(-1)).toEqual({ type: 'outcome', allocationId: 'a', outcome: { healthy: true, at: T0 + 2000, reasons: {} } });
  });

  it('with tasks not running, the deadline waits too; a task that failed meanwhile decides when the client reports it', () => {
    const { clock, registry, changes } = harness();
    registry.track('a', policy(), view({ web: task() }, { clientStatus: 'unknown' }));
    clock.advance(60_000);
    expect(changes.filter((c) => c.type === 'outcome')).toEqual([]);
    registry.updateAllocation('a', view({ web: task({ state: 'dead', failed: true, finishedAt: T0 + 3000 }) }, { clientStatus: 'failed' }));
    expect(changes.at(-1)).toMatchObject({ type: 'outcome', outcome: { healthy: false, at: T0 + 3000, reasons: { web: 'Unhealthy because of failed task' } } });
  });

  it('a stop the server writes while the client is away still ends it (stopped)', () => {
    const { registry } = harness();
    registry.track('a', policy(), view({ web: running(T0) }, { clientStatus: 'unknown' }));
    registry.updateAllocation('a', view({ web: running(T0) }, { clientStatus: 'lost', desiredStatus: 'stop' }));
    expect(registry.status('a')).toMatchObject({ state: 'stopped', outcome: { stopped: true } });
  });
});

describe('system jobs in a deployment (Nomad 1.11+)', () => {
  const systemJob = (update: TaskGroup['Update']): Job =>
    ({
      ID: 'agent', Type: 'system', Version: 0,
      TaskGroups: [{ Name: 'app', Tasks: [{ Name: 'web' }], Update: update }],
    }) as unknown as Job;
  // api/jobs.go DefaultUpdateStrategy, as the server stores it for a system job without an update block.
  const defaults = { MaxParallel: 1, HealthCheck: 'checks', MinHealthyTime: 10e9, HealthyDeadline: 300e9, ProgressDeadline: 600e9, AutoRevert: false, AutoPromote: false, Canary: 0, Stagger: 30e9 };

  it('are watched with the group update block, as health_hook.go does for any allocation in a deployment', () => {
    expect(healthPolicyFor(systemJob(defaults as TaskGroup['Update']), 'app', { deployment: true })).toMatchObject({
      watched: true,
      policy: { source: 'update', minHealthyTimeMs: 10_000, healthyDeadlineMs: 300_000, useChecks: true },
    });
  });

  it('on Nomad before 1.11 are not watched at all (the health hook is a no-op for them)', () => {
    expect(healthPolicyFor(systemJob(defaults as TaskGroup['Update']), 'app', { deployment: true, rules: nomadRulesFor('1.10.5').rules })).toEqual({
      watched: false,
      reason: 'Nomad 1.10.5 does not watch system jobs (Nomad does from 1.11)',
    });
    expect(healthPolicyFor(systemJob(null), 'app', { deployment: false, migration: true, rules: nomadRulesFor('1.6.3').rules })).toMatchObject({ watched: false });
  });

  it('without an update block, or max_parallel 0, are not', () => {
    expect(healthPolicyFor(systemJob(null), 'app', { deployment: true })).toMatchObject({ watched: false });
    expect(healthPolicyFor(systemJob({ ...defaults, MaxParallel: 0 } as TaskGroup['Update']), 'app', { deployment: true })).toMatchObject({ watched: false });
  });
});
