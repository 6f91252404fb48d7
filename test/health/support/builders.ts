/** Small builders for health-machine inputs, so each test states only what its rule is about. */
import { VirtualClock } from '../../../src/clock/index.js';
import { HealthRegistry, type HealthChange } from '../../../src/health/index.js';
import type { AllocationView, ExpectedCheck, HealthPolicy, TaskView } from '../../../machines/allocationHealthTypes.js';
import { NEWEST_NOMAD_RULES } from '../../../machines/nomadRules.js';

export const T0 = Date.parse('2026-11-29T17:00:00Z');

export function policy(overrides: Partial<HealthPolicy> = {}): HealthPolicy {
  return {
    source: 'update',
    minHealthyTimeMs: 2000,
    healthyDeadlineMs: 5000,
    useChecks: false,
    expectedChecks: [],
    completedTasksAreHealthy: false,
    rules: NEWEST_NOMAD_RULES,
    lostAfterMs: null,
    ...overrides,
  };
}

export function task(overrides: Partial<TaskView> = {}): TaskView {
  return { state: 'pending', failed: false, restarts: 0, startedAt: null, finishedAt: null, hook: null, sidecar: false, ...overrides };
}

export const running = (startedAt: number, overrides: Partial<TaskView> = {}): TaskView =>
  task({ state: 'running', startedAt, ...overrides });
export const exited = (startedAt: number, finishedAt: number, overrides: Partial<TaskView> = {}): TaskView =>
  task({ state: 'dead', startedAt, finishedAt, ...overrides });

export function view(tasks: Record<string, TaskView>, overrides: Partial<AllocationView> = {}): AllocationView {
  return { clientStatus: 'running', desiredStatus: 'run', tasks, ...overrides };
}

export function check(name: string, overrides: Partial<ExpectedCheck> = {}): ExpectedCheck {
  return { task: 'web', service: 'web', name, onUpdate: 'require_healthy', ...overrides };
}

/** A registry on a VirtualClock at T0 that records every change it announces. */
export function harness(): { clock: VirtualClock; registry: HealthRegistry; changes: HealthChange[] } {
  const clock = new VirtualClock({ start: T0 });
  const registry = new HealthRegistry({ clock });
  const changes: HealthChange[] = [];
  registry.subscribe((change) => changes.push(change));
  return { clock, registry, changes };
}
