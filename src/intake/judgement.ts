/**
 * How a group's allocations are judged, or why they are not. Nomad's client watches every
 * service/system allocation: with the update block in a deployment, else with the migrate block
 * (client/allocrunner/health_hook.go getHealthParams). Service checks come from Consul: without a
 * Consul source, judging a check-based group would call every allocation unhealthy at its deadline,
 * so such groups are left unjudged, and so are Nomad's own checks, which Nomad serves only one
 * allocation at a time.
 */
import { checksRequired } from '../../machines/allocationHealthRules.js';
import type { HealthPolicy } from '../../machines/allocationHealthTypes.js';
import { hasNomadProviderChecks } from '../consul/checkViews.js';
import { healthPolicyFor, type OptInHealthPolicy } from '../health/policy.js';
import type { Job } from '../nomad/types.js';

export type Judgement = { readonly policy: HealthPolicy } | { readonly reason: string };

export interface JudgementContext {
  /** The allocation is in a deployment. */
  readonly inDeployment: boolean;
  readonly optIn?: OptInHealthPolicy | undefined;
  /** A Consul source is followed. */
  readonly consul: boolean;
}

const NOMAD_CHECKS_UNREAD =
  'Nomad\'s own check results (provider = "nomad"), which Nomad serves only one allocation at a time ' +
  '(GET /v1/allocation/:id/checks, Nomad 1.4+) and this supervisor does not poll';

/** Throws HealthPolicyError for a group the job lacks or a policy Nomad would not accept. */
export function judgementOf(job: Job, group: string, context: JudgementContext): Judgement {
  const decision = healthPolicyFor(job, group, {
    deployment: context.inDeployment,
    migration: !context.inDeployment,
    ...(context.optIn ? { optIn: context.optIn } : {}),
  });
  if (!decision.watched) return { reason: decision.reason };
  if (checksRequired(decision.policy)) {
    const spec = (job.TaskGroups ?? []).find((candidate) => candidate.Name === group);
    // Nomad's own checks first: a Consul source would not help them.
    const missing =
      spec !== undefined && hasNomadProviderChecks(spec) ? NOMAD_CHECKS_UNREAD
      : context.consul ? undefined
      : 'a Consul source this supervisor does not have';
    if (missing !== undefined) return { reason: `group ${group} is judged by its service checks (health_check = "checks"), which need ${missing}` };
  }
  return { policy: decision.policy };
}
