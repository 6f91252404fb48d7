/** What the page shows, worked out without a DOM: list grouping, the allocation shown, words for times, deployment progress. */
import { clockText, relativeText, whenText } from '../../../src/inspect/browser/format.js';
import { emptyState } from '../../../src/inspect/browser/store.js';
import { groupAllocations, pickSelected, policyRows, progressSegments, timeRows, verdictWord, waitingText } from '../../../src/inspect/browser/views.js';
import type { AllocationInfo, DeploymentGroupInfo } from '../../../src/inspect/index.js';

const T = Date.parse('2026-11-29T18:00:00.000Z');
const iso = (ms: number): string => new Date(ms).toISOString();

function allocation(fields: Partial<AllocationInfo> & { id: string }): AllocationInfo {
  return {
    name: null, namespace: 'default', jobId: 'web', jobVersion: 0, taskGroup: 'app', deploymentId: null, state: 'pending', finished: false, lastTransition: null,
    policy: { source: 'update', minHealthyTimeMs: 10_000, healthyDeadlineMs: 300_000, useChecks: false, checks: [] },
    clientStatus: 'running', desiredStatus: 'run', tasks: [], checks: [], watchingSince: iso(T), latestStart: null, healthyAt: null,
    deadlineAt: iso(T + 300_000), checksPassingSince: null, rejected: null, verdict: null, updatedAt: iso(T), ...fields,
  };
}

test('times in words: UTC clock, countdowns to the tenth of a second, minutes beyond', () => {
  expect(clockText(T + 3_300)).toBe('18:00:03.300');
  expect(relativeText(T + 1_540, T)).toBe('in 1.5s');
  expect(relativeText(T - 125_000, T)).toBe('2m 5s ago');
  expect(relativeText(T + 10, T)).toBe('now');
  expect(relativeText(T + 7_380_000, T)).toBe('in 2h 3m');
  expect(whenText(null, T)).toBe('—');
  expect(whenText(iso(T + 28_000), T)).toBe('18:00:28.000 UTC (in 28s)');
});

test('the list: jobs by name, versions newest first, a summary per version; the filter reads job, group, name and ID', () => {
  const all = [
    allocation({ id: 'b1', jobId: 'web', jobVersion: 1, name: 'web.app[1]', state: 'healthy', finished: true, verdict: { healthy: true, at: iso(T), reasons: [] } }),
    allocation({ id: 'b0', jobId: 'web', jobVersion: 1, name: 'web.app[0]', state: 'minHealthyWait', deploymentId: 'd-1' }),
    allocation({ id: 'a0', jobId: 'web', jobVersion: 0, name: 'web.app[0]', state: 'stopped', finished: true, verdict: { healthy: null, at: iso(T), reasons: [] } }),
    allocation({ id: 'c0', jobId: 'api', taskGroup: 'http', name: 'api.http[0]' }),
  ];
  const groups = groupAllocations(all, '');
  expect(groups.map((g) => g.job)).toEqual(['default/api', 'default/web']);
  expect(groups[1]!.versions.map((v) => [v.version, v.deploymentId, v.summary, v.allocations.map((a) => a.id)])).toEqual([
    [1, 'd-1', '1 minHealthyWait, 1 healthy', ['b0', 'b1']],
    [0, null, '1 stopped', ['a0']],
  ]);
  expect(groupAllocations(all, ' HTTP ').map((g) => g.job)).toEqual(['default/api']);
  expect(groupAllocations(all, 'b1')[0]!.versions[0]!.allocations.map((a) => a.id)).toEqual(['b1']);
  expect(verdictWord(all[2]!)).toBe('stopped');
});

test('the allocation shown: the one clicked, else the one in the address, else the first still judged, else any', () => {
  const state = emptyState();
  expect(pickSelected(state, null, null)).toBeNull();
  state.allocations.set('done', allocation({ id: 'done', finished: true }));
  expect(pickSelected(state, null, null)).toBe('done');
  state.allocations.set('live', allocation({ id: 'live' }));
  expect(pickSelected(state, null, null)).toBe('live');
  expect(pickSelected(state, null, 'done')).toBe('done');
  expect(pickSelected(state, 'done', 'live')).toBe('done');
  expect(pickSelected(state, 'gone', 'also-gone')).toBe('live');
});

test('times and policy rows, and the sentence for an allocation still waiting', () => {
  const waiting = allocation({ id: 'w', latestStart: iso(T + 2_000), healthyAt: iso(T + 12_000) });
  expect(timeRows(waiting, T + 4_000)).toEqual([
    ['watching since', '18:00:00.000 UTC (4s ago)'],
    ['latest task start', '18:00:02.000 UTC (2s ago)'],
    ['becomes healthy', '18:00:12.000 UTC (in 8s)'],
    ['healthy deadline', '18:05:00.000 UTC (in 4m 56s)'],
  ]);
  expect(waitingText(waiting, T + 4_000)).toBe('healthy in 8s if nothing changes; deadline in 4m 56s.');
  expect(waitingText(allocation({ id: 'x' }), T)).toBe('waiting for every task to run; deadline in 5m 0s.');
  expect(policyRows(allocation({ id: 'p', policy: { source: 'migrate', minHealthyTimeMs: 10_000, healthyDeadlineMs: 300_000, useChecks: true, checks: [{ task: '', service: 'web', name: 'alive', onUpdate: 'require_healthy' }] } }))).toEqual([
    ['from', 'migrate block'],
    ['health_check', 'checks'],
    ['min_healthy_time', '10s'],
    ['healthy_deadline', '5m0s'],
    ['expected checks', 'group/web/alive (require_healthy)'],
  ]);
});

test('a deployment group\'s bar: healthy, unhealthy, placed not yet judged, still to place', () => {
  const group = (fields: Partial<DeploymentGroupInfo>): DeploymentGroupInfo => ({
    name: 'app', desiredTotal: 5, placed: 0, healthy: 0, unhealthy: 0, desiredCanaries: 0, placedCanaries: 0, promoted: false,
    autoRevert: false, autoPromote: false, progressDeadlineMs: 600_000, requireProgressBy: null, ...fields,
  });
  expect(progressSegments(group({ placed: 4, healthy: 2, unhealthy: 1 }))).toEqual([
    { kind: 'healthy', count: 2 },
    { kind: 'unhealthy', count: 1 },
    { kind: 'placed', count: 1 },
    { kind: 'missing', count: 1 },
  ]);
  expect(progressSegments(group({}))).toEqual([{ kind: 'missing', count: 5 }]);
  // More placed than desired (replacements): nothing missing.
  expect(progressSegments(group({ desiredTotal: 2, placed: 3, healthy: 2, unhealthy: 1 }))).toEqual([
    { kind: 'healthy', count: 2 },
    { kind: 'unhealthy', count: 1 },
  ]);
});
