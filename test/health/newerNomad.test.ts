/**
 * Health semantics against newer Nomads (nomad-protocol §10): ClientStatus `unknown` (1.3+, a
 * disconnected client) is neither bad input nor a failure (client/allochealth/tracker.go fails an
 * allocation only on ClientStatus `failed`), and a system job gets the default update strategy in
 * a deployment (1.11+), judged as a service job's.
 */
import { allocationView, healthPolicyFor } from '../../src/health/index.js';
import type { Allocation, Job, TaskGroup } from '../../src/nomad/types.js';
import { T0, harness, policy, running, task, view } from './support/builders.js';

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

  it('does not fail the allocation or reset min_healthy_time: healthy on time from the task states', () => {
    const { clock, registry, changes } = harness();
    registry.track('a', policy(), view({ web: running(T0) }));
    clock.advance(1000);
    registry.updateAllocation('a', view({ web: running(T0) }, { clientStatus: 'unknown' }));
    clock.advance(1000);
    expect(changes.at(-1)).toEqual({ type: 'outcome', allocationId: 'a', outcome: { healthy: true, at: T0 + 2000, reasons: {} } });
  });

  it('with tasks not running, the deadline still decides, with the tasks explained', () => {
    const { clock, registry, changes } = harness();
    registry.track('a', policy(), view({ web: task() }, { clientStatus: 'unknown' }));
    clock.advance(4999);
    expect(changes.filter((c) => c.type === 'outcome')).toEqual([]);
    clock.advance(1);
    const outcome = changes.find((c) => c.type === 'outcome');
    expect(outcome).toMatchObject({ outcome: { healthy: false, at: T0 + 5000 } });
    expect(JSON.stringify(outcome)).toMatch(/Task not running by healthy_deadline/);
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

  it('without an update block (Nomad before 1.11), or max_parallel 0, are not', () => {
    expect(healthPolicyFor(systemJob(null), 'app', { deployment: true })).toMatchObject({ watched: false });
    expect(healthPolicyFor(systemJob({ ...defaults, MaxParallel: 0 } as TaskGroup['Update']), 'app', { deployment: true })).toMatchObject({ watched: false });
  });
});
