/**
 * A Nomad deployment as the inspector shows it: per task group, Nomad's own counts (desired,
 * placed, healthy, unhealthy, canaries, promotion, progress deadline), field by field, so whatever
 * else a Deployment carries is not published unasked. Malformed numbers become 0, never NaN.
 */
import { durationMs, parseNomadTime } from '../health/nomadTime.js';
import type { Deployment, DeploymentState } from '../nomad/types.js';
import type { DeploymentGroupInfo, DeploymentInfo } from './schema.js';
import { isoTime, isoTimeOrNull } from './time.js';

const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0);
const text = (value: unknown): string => (typeof value === 'string' ? value : '');

function groupInfo(name: string, state: Partial<DeploymentState>): DeploymentGroupInfo {
  const requireBy = parseNomadTime(state.RequireProgressBy);
  return {
    name,
    desiredTotal: count(state.DesiredTotal),
    placed: count(state.PlacedAllocs),
    healthy: count(state.HealthyAllocs),
    unhealthy: count(state.UnhealthyAllocs),
    desiredCanaries: count(state.DesiredCanaries),
    placedCanaries: Array.isArray(state.PlacedCanaries) ? state.PlacedCanaries.length : 0,
    promoted: state.Promoted === true,
    autoRevert: state.AutoRevert === true,
    autoPromote: state.AutoPromote === true,
    progressDeadlineMs: durationMs(state.ProgressDeadline) ?? 0,
    requireProgressBy: requireBy.ok ? isoTimeOrNull(requireBy.ms) : null,
  };
}

export function deploymentInfo(deployment: Deployment, now: number): DeploymentInfo {
  const groups = deployment.TaskGroups !== null && typeof deployment.TaskGroups === 'object' ? deployment.TaskGroups : {};
  return {
    id: text(deployment.ID),
    namespace: text(deployment.Namespace) || 'default',
    jobId: text(deployment.JobID),
    jobVersion: count(deployment.JobVersion),
    status: text(deployment.Status),
    statusDescription: text(deployment.StatusDescription),
    groups: Object.entries(groups)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, state]) => groupInfo(name, (state ?? {}) as Partial<DeploymentState>)),
    updatedAt: isoTime(now),
  };
}
