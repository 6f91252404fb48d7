/**
 * What each part of the page shows, worked out from the page state without touching the DOM, so it
 * can be tested on its own: the allocation list grouped by job and version, the choice of the
 * allocation shown, its times and policy in words, and a deployment group's progress.
 */
import type { AllocationInfo, DeploymentGroupInfo, DeploymentInfo } from '../schema.js';
import { goDuration, instant, relativeText, shortId, whenText } from './format.js';
import type { PageState } from './store.js';

/** What the list's badge says: the verdict once judged, else the state. */
export function verdictWord(a: AllocationInfo): string {
  if (a.verdict === null) return a.state;
  if (a.verdict.healthy === null) return 'stopped';
  return a.verdict.healthy ? 'healthy' : 'unhealthy';
}

export function matches(a: AllocationInfo, filter: string): boolean {
  const wanted = filter.trim().toLowerCase();
  return wanted === '' || [a.jobId, a.name ?? '', a.id, a.namespace, a.taskGroup].some((text) => text.toLowerCase().includes(wanted));
}

export interface VersionGroup {
  version: number | null;
  deploymentId: string | null;
  /** "2 healthy, 1 minHealthyWait". */
  summary: string;
  allocations: AllocationInfo[];
}

export interface JobGroup {
  /** "namespace/job". */
  job: string;
  versions: VersionGroup[];
}

/** Jobs by name, their versions newest first, allocations by name then ID. */
export function groupAllocations(allocations: Iterable<AllocationInfo>, filter: string): JobGroup[] {
  const jobs = new Map<string, Map<number | null, AllocationInfo[]>>();
  for (const a of allocations) {
    if (!matches(a, filter)) continue;
    const job = `${a.namespace}/${a.jobId}`;
    const versions = jobs.get(job) ?? new Map<number | null, AllocationInfo[]>();
    jobs.set(job, versions);
    versions.set(a.jobVersion, [...(versions.get(a.jobVersion) ?? []), a]);
  }
  return [...jobs.keys()].sort().map((job) => ({
    job,
    versions: [...jobs.get(job)!.entries()]
      .sort(([x], [y]) => (y ?? -1) - (x ?? -1))
      .map(([version, list]) => {
        const sorted = [...list].sort((x, y) => (x.name ?? '').localeCompare(y.name ?? '') || x.id.localeCompare(y.id));
        const counts = new Map<string, number>();
        for (const a of sorted) counts.set(verdictWord(a), (counts.get(verdictWord(a)) ?? 0) + 1);
        return {
          version,
          deploymentId: sorted.find((a) => a.deploymentId !== null)?.deploymentId ?? null,
          summary: [...counts].map(([word, n]) => `${n} ${word}`).join(', '),
          allocations: sorted,
        };
      }),
  }));
}

/** The allocation shown: the one asked for if known, else the one named in the address, else the first still judged, else any. */
export function pickSelected(state: PageState, asked: string | null, fromAddress: string | null): string | null {
  if (asked !== null && state.allocations.has(asked)) return asked;
  if (fromAddress !== null && state.allocations.has(fromAddress)) return fromAddress;
  const all = [...state.allocations.values()];
  return (all.find((a) => !a.finished) ?? all[0])?.id ?? null;
}

export type Row = readonly [term: string, value: string];

export function timeRows(a: AllocationInfo, now: number): Row[] {
  const healthy = a.verdict?.healthy === true;
  return [
    ['watching since', whenText(a.watchingSince, now)],
    ['latest task start', whenText(a.latestStart, now)],
    [healthy ? 'became healthy' : 'becomes healthy', a.healthyAt === null ? '— (not every task is running)' : whenText(a.healthyAt, now)],
    ...(a.policy.useChecks && a.policy.checks.length > 0 ? [['checks passing since', whenText(a.checksPassingSince, now)] as const] : []),
    ['healthy deadline', whenText(a.deadlineAt, now)],
  ];
}

const SOURCES: Readonly<Record<string, string>> = { update: 'update block (deployment)', migrate: 'migrate block', 'opt-in': 'opt-in policy' };

export function policyRows(a: AllocationInfo): Row[] {
  const { policy } = a;
  return [
    ['from', SOURCES[policy.source] ?? policy.source],
    ['health_check', policy.useChecks ? 'checks' : 'task_states'],
    ['min_healthy_time', goDuration(policy.minHealthyTimeMs)],
    ['healthy_deadline', goDuration(policy.healthyDeadlineMs)],
    ['expected checks', policy.checks.length === 0 ? 'none' : policy.checks.map((c) => `${c.task || 'group'}/${c.service}/${c.name} (${c.onUpdate})`).join(', ')],
  ];
}

/** One sentence for an allocation not judged yet. */
export function waitingText(a: AllocationInfo, now: number): string {
  const healthyAt = instant(a.healthyAt);
  const deadline = instant(a.deadlineAt);
  const first = healthyAt === null ? 'waiting for every task to run' : `healthy ${relativeText(healthyAt, now)} if nothing changes`;
  return `${first}; deadline ${deadline === null ? '—' : relativeText(deadline, now)}.`;
}

export interface ProgressSegment {
  kind: 'healthy' | 'unhealthy' | 'placed' | 'missing';
  count: number;
}

/**
 * A group's bar, as Nomad's UI draws deployment progress: healthy, unhealthy, placed but not yet
 * judged, and still to place, out of what is desired (or placed, when more were).
 */
export function progressSegments(group: DeploymentGroupInfo): ProgressSegment[] {
  const judged = group.healthy + group.unhealthy;
  const placed = Math.max(0, group.placed - judged);
  const missing = Math.max(0, group.desiredTotal - Math.max(group.placed, judged));
  return [
    { kind: 'healthy' as const, count: group.healthy },
    { kind: 'unhealthy' as const, count: group.unhealthy },
    { kind: 'placed' as const, count: placed },
    { kind: 'missing' as const, count: missing },
  ].filter((segment) => segment.count > 0);
}

export function groupCounts(group: DeploymentGroupInfo): Row[] {
  return [
    ['desired', String(group.desiredTotal)],
    ['placed', String(group.placed)],
    ['healthy', String(group.healthy)],
    ['unhealthy', String(group.unhealthy)],
    ...(group.desiredCanaries > 0 ? [['canaries', `${group.placedCanaries}/${group.desiredCanaries}${group.promoted ? ', promoted' : ''}`] as const] : []),
  ];
}

/** The latest deployments first; the one of the shown allocation marked. */
export function deploymentsShown(state: PageState): DeploymentInfo[] {
  return [...state.deployments.values()].reverse();
}

export function deploymentTitle(d: DeploymentInfo): string {
  return `${d.namespace}/${d.jobId} v${d.jobVersion} · ${shortId(d.id)}`;
}
