/**
 * The health policy of an allocation, decided as Nomad's client decides whether and how to watch it
 * (client/allocrunner/health_hook.go newAllocHealthWatcherHook, init and getHealthParams), by the
 * rules of the cluster's release, plus an opt-in policy for the allocations Nomad does not watch.
 *
 * The expected checks are the group's, named as the job spec names them. Where a name refers to a
 * variable (`${NOMAD_ALLOC_INDEX}`, `${attr.unique.hostname}`...), each allocation's client
 * interpolates it before comparing (tracker.go, taskenv.InterpolateService): `allocationPolicy`
 * does the same for one allocation.
 */
import { CHECK_ON_UPDATES } from '../../machines/allocationHealthInput.js';
import type { CheckOnUpdate, ExpectedCheck, HealthPolicy } from '../../machines/allocationHealthTypes.js';
import { NEWEST_NOMAD_RULES, type NomadRules } from '../../machines/nomadRules.js';
import type { Job, MigrateStrategy, Service, TaskGroup, UpdateStrategy } from '../nomad/types.js';
import { HealthPolicyError } from './errors.js';
import { durationMs } from './nomadTime.js';
import { interpolate, refersToNode, refersToVariables, type TaskEnvironment } from './taskEnvironment.js';

/** A user-supplied policy for allocations Nomad does not watch (batch, system, no update block, manual). */
export interface OptInHealthPolicy {
  readonly minHealthyTimeMs: number;
  readonly healthyDeadlineMs: number;
  /** Default "task_states". */
  readonly healthCheck?: 'checks' | 'task_states';
}

export interface HealthPolicyContext {
  /** The allocation belongs to a deployment (its DeploymentID is set). */
  readonly deployment: boolean;
  /** The allocation replaces one being migrated off a draining node. */
  readonly migration?: boolean;
  readonly optIn?: OptInHealthPolicy;
  /** The rules of the cluster's Nomad release (default: today's Nomad). */
  readonly rules?: NomadRules;
}

export type HealthPolicyDecision =
  | { readonly watched: true; readonly policy: HealthPolicy }
  | { readonly watched: false; readonly reason: string };

/** nomad/structs DefaultMigrateStrategy. */
const MIGRATE_DEFAULTS = { HealthCheck: 'checks', MinHealthyTime: 10_000_000_000, HealthyDeadline: 300_000_000_000 } as const;
/** Jobs whose tasks are meant to finish. */
const BATCH_TYPES: ReadonlySet<string> = new Set(['batch', 'sysbatch']);

function onUpdateOf(subject: string, value: unknown, inherited: CheckOnUpdate): CheckOnUpdate {
  if (value === undefined || value === null || value === '') return inherited;
  if (!CHECK_ON_UPDATES.has(value)) throw new HealthPolicyError(subject, `unknown on_update ${JSON.stringify(value)}`);
  return value as CheckOnUpdate;
}

function servicesChecks(task: string, services: readonly Service[] | null | undefined, environment?: TaskEnvironment, rules?: NomadRules): ExpectedCheck[] {
  const checks: ExpectedCheck[] = [];
  for (const service of services ?? []) {
    const serviceOnUpdate = onUpdateOf(`service ${service.Name}`, service.OnUpdate, 'require_healthy');
    const serviceName = environment === undefined ? service.Name : interpolate(service.Name, environment);
    for (const check of service.Checks ?? []) {
      // api/services.go: a check without on_update inherits its service's.
      const onUpdate = onUpdateOf(`check ${check.Name}`, check.OnUpdate, serviceOnUpdate);
      const name = environment === undefined ? check.Name : interpolate(check.Name, environment);
      // Nomad 1.4.5 and 1.5.0 counted the registered checks against the names as written.
      const compared = rules !== undefined && !rules.interpolatedCheckNames && name !== check.Name ? { comparedAs: check.Name } : {};
      checks.push({ task, service: serviceName, name, onUpdate, ...compared });
    }
  }
  return checks;
}

/** Every check the group declares, group services under task '', named as the job spec names them. */
export function expectedChecks(group: TaskGroup): ExpectedCheck[] {
  return [...servicesChecks('', group.Services), ...group.Tasks.flatMap((task) => servicesChecks(task.Name, task.Services))];
}

function everyName(group: TaskGroup): string[] {
  const services = [...(group.Services ?? []), ...group.Tasks.flatMap((task) => task.Services ?? [])];
  return services.flatMap((service) => [service.Name, ...(service.Checks ?? []).map((check) => check.Name)]);
}

/**
 * How far the group's check names depend on the allocation: not at all, on the allocation's own
 * variables, or on its node's record too (datacenter, class, pool, attributes, meta).
 */
export function checkNamesDependOn(group: TaskGroup): 'nothing' | 'allocation' | 'node' {
  const names = everyName(group).filter(refersToVariables);
  if (names.length === 0) return 'nothing';
  return names.some(refersToNode) ? 'node' : 'allocation';
}

/**
 * `policy` (the group's) for one of its allocations: every service and check name interpolated with
 * that allocation's environments (taskEnvironments: '' for the group, then each task's).
 */
export function allocationPolicy(policy: HealthPolicy, group: TaskGroup, environments: ReadonlyMap<string, TaskEnvironment>): HealthPolicy {
  const checks = [
    ...servicesChecks('', group.Services, environments.get(''), policy.rules),
    ...group.Tasks.flatMap((task) => servicesChecks(task.Name, task.Services, environments.get(task.Name), policy.rules)),
  ];
  return { ...policy, expectedChecks: checks };
}

function duration(subject: string, nanoseconds: unknown): number {
  const ms = durationMs(nanoseconds);
  if (ms === null) throw new HealthPolicyError(subject, `${JSON.stringify(String(nanoseconds))} is not a duration in nanoseconds`);
  return ms;
}

/** How long a disconnected client's allocation stays unknown: disconnect.lost_after (1.8+), else max_client_disconnect. */
function lostAfterMs(group: TaskGroup): number | null {
  const nanoseconds = group.Disconnect?.LostAfter ?? group.MaxClientDisconnect;
  if (nanoseconds === undefined || nanoseconds === null) return null;
  return duration(`group ${group.Name} disconnect lost_after`, nanoseconds);
}

function policyOf(
  source: HealthPolicy['source'],
  group: TaskGroup,
  strategy: { HealthCheck?: unknown; MinHealthyTime?: unknown; HealthyDeadline?: unknown },
  rules: NomadRules,
  completedTasksAreHealthy = false,
): HealthPolicy {
  const block = source === 'update' ? 'update' : 'migrate';
  const healthCheck = strategy.HealthCheck;
  if (healthCheck !== 'checks' && healthCheck !== 'task_states') {
    throw new HealthPolicyError(`group ${group.Name} ${block}`, `unknown health_check ${JSON.stringify(healthCheck)}`);
  }
  const minHealthyTimeMs = duration(`group ${group.Name} ${block} min_healthy_time`, strategy.MinHealthyTime);
  const healthyDeadlineMs = duration(`group ${group.Name} ${block} healthy_deadline`, strategy.HealthyDeadline);
  return {
    source,
    minHealthyTimeMs,
    healthyDeadlineMs,
    useChecks: healthCheck === 'checks',
    expectedChecks: expectedChecks(group),
    completedTasksAreHealthy,
    rules,
    lostAfterMs: lostAfterMs(group),
  };
}

function optInPolicy(job: Job, group: TaskGroup, optIn: OptInHealthPolicy, rules: NomadRules): HealthPolicy {
  const { minHealthyTimeMs, healthyDeadlineMs, healthCheck = 'task_states' } = optIn;
  for (const [name, value] of [['minHealthyTimeMs', minHealthyTimeMs], ['healthyDeadlineMs', healthyDeadlineMs]] as const) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw new HealthPolicyError('opt-in health policy', `${name} ${String(value)} is not a duration`);
    }
  }
  // Nomad refuses the same in an update block: the allocation could never be healthy.
  if (minHealthyTimeMs >= healthyDeadlineMs) {
    throw new HealthPolicyError('opt-in health policy', 'min_healthy_time must be shorter than healthy_deadline');
  }
  const strategy = { HealthCheck: healthCheck, MinHealthyTime: minHealthyTimeMs * 1_000_000, HealthyDeadline: healthyDeadlineMs * 1_000_000 };
  return policyOf('opt-in', group, strategy, rules, BATCH_TYPES.has(job.Type ?? 'service'));
}

function nomadDecision(job: Job, group: TaskGroup, context: HealthPolicyContext, rules: NomadRules): HealthPolicyDecision {
  const type = job.Type ?? 'service';
  // health_hook.go: neither deployments nor migrations care about non-service jobs (system ones
  // are watched from NomadRules.systemJobDeployments on).
  if (type === 'system' && !rules.systemJobDeployments) return { watched: false, reason: `Nomad ${rules.version} does not watch system jobs (Nomad does from 1.11)` };
  if (type !== 'service' && type !== 'system') return { watched: false, reason: `Nomad does not watch ${type} jobs` };
  if (context.deployment) {
    const update: UpdateStrategy | null | undefined = group.Update ?? job.Update;
    if (update === null || update === undefined || update.MaxParallel === 0) {
      return { watched: false, reason: `group ${group.Name} has no update block` };
    }
    if (update.HealthCheck === 'manual') return { watched: false, reason: `group ${group.Name} sets health manually` };
    return { watched: true, policy: policyOf('update', group, update, rules) };
  }
  if (context.migration === true) {
    const migrate: MigrateStrategy = { ...MIGRATE_DEFAULTS, ...(group.Migrate ?? {}) };
    return { watched: true, policy: policyOf('migrate', group, migrate, rules) };
  }
  return { watched: false, reason: 'the allocation is neither in a deployment nor a migration' };
}

/**
 * How `groupName` of `job` is to be judged. Throws HealthPolicyError when the job names no such
 * group or its update/migrate block or opt-in policy holds a value Nomad would not accept.
 */
export function healthPolicyFor(job: Job, groupName: string, context: HealthPolicyContext): HealthPolicyDecision {
  const group = (job.TaskGroups ?? []).find((candidate) => candidate.Name === groupName);
  if (group === undefined || !Array.isArray(group.Tasks)) {
    throw new HealthPolicyError(`job ${job.ID}`, `has no task group ${JSON.stringify(groupName)}`);
  }
  const rules = context.rules ?? NEWEST_NOMAD_RULES;
  const decision = nomadDecision(job, group, context, rules);
  if (decision.watched || context.optIn === undefined) return decision;
  return { watched: true, policy: optInPolicy(job, group, context.optIn, rules) };
}
