/**
 * Nomad's own service checks (service provider = "nomad", Nomad 1.4+) as the health rules see them.
 * GET /v1/allocation/:id/checks answers the client's check store: a map of check ID to its latest
 * result (nomad/structs/checks.go CheckQueryResult), a pending stub for every check until it first
 * runs (client/allocrunner/checks_hook.go).
 *
 * tracker.go watchNomadEvents counts a check as passing when its status is `success`, or `failure`
 * in readiness mode (on_update = "ignore"), and never while `pending`. As views: success is passing,
 * failure critical (which the check's own on_update = "ignore" tolerates, as readiness mode does),
 * and a pending check is left out, so the expected checks are not all there and the allocation
 * cannot count as passing, whatever its on_update.
 */
import type { CheckView } from '../../machines/allocationHealthTypes.js';

/** One entry of the answer (api.CheckQueryResult); Task is absent for a group service's check. */
export interface NomadCheckResult {
  readonly ID: string;
  readonly Mode: 'healthiness' | 'readiness';
  readonly Status: 'success' | 'failure' | 'pending';
  readonly StatusCode?: number;
  readonly Output: string;
  /** Unix seconds of the run. */
  readonly Timestamp: number;
  /** The allocation's name ("job.group[0]"), as Nomad fills it in. */
  readonly Group: string;
  readonly Task?: string;
  readonly Service: string;
  readonly Check: string;
}

function isResult(value: unknown): value is NomadCheckResult {
  if (typeof value !== 'object' || value === null) return false;
  const result = value as Record<string, unknown>;
  return typeof result.Service === 'string' && typeof result.Check === 'string' && typeof result.Status === 'string' && (result.Task === undefined || typeof result.Task === 'string');
}

function byIdentity(a: CheckView, b: CheckView): number {
  const left = `${a.task}\u0000${a.service}\u0000${a.name}`;
  const right = `${b.task}\u0000${b.service}\u0000${b.name}`;
  return left < right ? -1 : left > right ? 1 : 0;
}

/**
 * The check views of one allocation from its /checks answer (null or `{}` when it has none yet), in
 * a fixed order. Entries that are not check results are left out: they cannot count as passing.
 */
export function checkViewsFromResults(body: unknown): CheckView[] {
  if (typeof body !== 'object' || body === null) return [];
  const views: CheckView[] = [];
  for (const result of Object.values(body)) {
    if (!isResult(result)) continue;
    if (result.Status !== 'success' && result.Status !== 'failure') continue;
    views.push({ task: result.Task ?? '', service: result.Service, name: result.Check, status: result.Status === 'success' ? 'passing' : 'critical' });
  }
  return views.sort(byIdentity);
}
