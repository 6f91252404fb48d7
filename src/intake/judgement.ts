/**
 * How a group's allocations are judged, or why they are not. Nomad's client watches every
 * service/system allocation (system ones from 1.11): with the update block in a deployment, else
 * with the migrate block (client/allocrunner/health_hook.go getHealthParams). Service checks come
 * from Consul or from Nomad itself (src/nomadChecks): a group whose checks cannot be read here
 * would have every allocation called unhealthy at its deadline, so it is left unjudged, with why.
 */
import { checksRequired } from '../../machines/allocationHealthRules.js';
import type { HealthPolicy } from '../../machines/allocationHealthTypes.js';
import type { NomadRules } from '../../machines/nomadRules.js';
import { checkNamesDependOn, healthPolicyFor, type OptInHealthPolicy } from '../health/policy.js';
import type { Job, TaskGroup } from '../nomad/types.js';

export type Judgement =
  | {
      readonly policy: HealthPolicy;
      /** What the group's check names depend on: each allocation then gets its own policy (policy.ts allocationPolicy). */
      readonly names: 'nothing' | 'allocation' | 'node';
    }
  | { readonly reason: string };

export interface JudgementContext {
  /** The allocation is in a deployment. */
  readonly inDeployment: boolean;
  readonly optIn?: OptInHealthPolicy | undefined;
  /** The rules of the cluster's Nomad release. */
  readonly rules: NomadRules;
  /** Why this group's service checks cannot be read here, or undefined (ServiceCheckSources.unavailable). */
  readonly checksUnavailable: (group: TaskGroup) => string | undefined;
}

/** Throws HealthPolicyError for a group the job lacks or a policy Nomad would not accept. */
export function judgementOf(job: Job, group: string, context: JudgementContext): Judgement {
  const decision = healthPolicyFor(job, group, {
    deployment: context.inDeployment,
    migration: !context.inDeployment,
    rules: context.rules,
    ...(context.optIn ? { optIn: context.optIn } : {}),
  });
  if (!decision.watched) return { reason: decision.reason };
  if (!checksRequired(decision.policy)) return { policy: decision.policy, names: 'nothing' };
  const spec = (job.TaskGroups ?? []).find((candidate) => candidate.Name === group) as TaskGroup;
  const missing = context.checksUnavailable(spec);
  if (missing !== undefined) return { reason: `group ${group} is judged by its service checks (health_check = "checks"), which need ${missing}` };
  return { policy: decision.policy, names: checkNamesDependOn(spec) };
}
