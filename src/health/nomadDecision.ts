/**
 * Nomad's own health decision about an allocation, as its client recorded it: the allocation's
 * DeploymentStatus (Healthy, Timestamp) and the "Alloc Unhealthy" task events written with it
 * (client/allocrunner/health_hook.go: SetHealth). Warden judges by the history; Nomad's decision
 * serves it three ways:
 *
 * - Knowledge: the copy that carries the decision was synced by the client after it decided, with
 *   its task states as they stood then, so the copy speaks for everything up to the decision's time
 *   (nothing earlier about the allocation is still in flight).
 * - The history to judge from where the kept one cannot decide (Nomad keeps a task's last 10 events).
 * - A second opinion: where Warden's own verdict differs, it says so.
 *
 * The operator's health API (PUT /v1/deployment/allocation-health) writes the same fields from the
 * server; a decision written so is taken as Nomad's too.
 */
import { formatGoDuration } from '../../machines/allocationHealthRules.js';
import type { HealthPolicy, HealthVerdict } from '../../machines/allocationHealthTypes.js';
import type { Allocation } from '../nomad/types.js';
import { isNanoTime, nanoTimeMs, parseNomadTime } from './nomadTime.js';

/** A verdict that is Nomad's recorded decision, taken where the allocation's kept history cannot decide. */
export interface NomadRecordedVerdict extends HealthVerdict {
  readonly basis: 'nomad';
}

export interface NomadDecision {
  readonly healthy: boolean;
  /** DeploymentStatus.Timestamp, epoch ms on the client's clock (the clock of its task events). */
  readonly at: number;
}

/**
 * The decision `allocation` carries, if its client has made one for the deployment it is in;
 * one timed before `since` (the start of a re-watch after an in-place update) is not about this watch.
 */
export function nomadDecision(allocation: Pick<Allocation, 'DeploymentStatus'>, since?: number): NomadDecision | undefined {
  const status = allocation.DeploymentStatus;
  if (status === null || status === undefined || typeof status.Healthy !== 'boolean') return undefined;
  const parsed = parseNomadTime(status.Timestamp);
  if (!parsed.ok || parsed.ms === null) return undefined;
  if (since !== undefined && parsed.ms < since) return undefined;
  return { healthy: status.Healthy, at: parsed.ms };
}

/**
 * Nomad 1.1.2 compared against a deadline it never set and said "by deadline"; today's tracker says
 * which one: "… by healthy_deadline of 20s". Other explanations read the same in both.
 */
export function todaysWords(message: string, policy: Pick<HealthPolicy, 'healthyDeadlineMs'>): string {
  const deadline = `healthy_deadline of ${formatGoDuration(policy.healthyDeadlineMs)}`;
  if (message === 'Task not running by deadline') return `Task not running by ${deadline}`;
  const minHealthy = /^Task not running for min_healthy_time of (.+) by deadline$/.exec(message);
  return minHealthy ? `Task not running for min_healthy_time of ${minHealthy[1]} by ${deadline}` : message;
}

/** A recorded explanation in the words of the release Warden judges by (its own verdicts speak them too). */
function releaseWords(message: string, policy: Pick<HealthPolicy, 'healthyDeadlineMs' | 'rules'>): string {
  return policy.rules.healthyDeadlineWording ? todaysWords(message, policy) : message;
}

/** How close to the decision its "Alloc Unhealthy" events are timed (written in the same call, microseconds apart). */
const SAME_DECISION_MS = 1_000;

/** Per task, Nomad's explanation written with an unhealthy `decision` (in the release's words), as far as the kept events still hold it. */
export function nomadReasons(allocation: Pick<Allocation, 'TaskStates'>, decision: NomadDecision, policy: Pick<HealthPolicy, 'healthyDeadlineMs' | 'rules'>): Record<string, string> {
  const reasons: Record<string, string> = {};
  if (decision.healthy) return reasons;
  for (const [task, state] of Object.entries(allocation.TaskStates ?? {})) {
    for (const event of state?.Events ?? []) {
      if (event.Type !== 'Alloc Unhealthy' || !isNanoTime(event.Time)) continue;
      if (Math.abs(nanoTimeMs(event.Time) - decision.at) > SAME_DECISION_MS) continue;
      reasons[task] = releaseWords(event.DisplayMessage || event.Message || 'Unhealthy', policy);
    }
  }
  return reasons;
}
