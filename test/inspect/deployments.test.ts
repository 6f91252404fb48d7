/**
 * Deployments on the inspector, in Nomad's own counts per task group (what `nomad deployment status`
 * and Nomad's UI show): desired, placed, healthy, unhealthy, canaries and promotion, the progress
 * deadline, and the status, live as the deployment moves; and the snapshot's schema conventions.
 */
import type { DeploymentInfo, InspectorSnapshot } from '../../src/inspect/index.js';
import { serviceJob } from '../testing/helpers.js';
import { driveTo, loadScenario, requestedIndex, stripNomadVerdict } from '../supervisor/support/harness.js';
import { fetchSnapshot, openLive, startInspected, until } from './support.js';

const START = Date.UTC(2026, 10, 29, 18);
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const UPDATE = { HealthCheck: 'task_states', MinHealthyTime: 2e9, HealthyDeadline: 20e9, ProgressDeadline: 60e9, Canary: 1 };

test('a canary deployment: desired, placed, canaries, healthy counts and promotion as Nomad reports them, live', async () => {
  const inspected = await startInspected(START);
  try {
    const live = await openLive(inspected.server.url);
    const { cluster } = inspected.fake;
    cluster.registerJob(serviceJob('web', { Update: UPDATE, TaskGroups: [{ Name: 'app', Count: 3, Tasks: [{ Name: 'main', Driver: 'raw_exec', Config: { command: '/bin/sh' } }] }] }));
    const [canary] = cluster.placeAllocations('web', { count: 1, canary: true });
    await driveTo(inspected.clock, START + 500);
    const placed = (await fetchSnapshot(inspected.server.url)).deployments;
    expect(placed).toEqual([
      {
        id: canary!.DeploymentID,
        namespace: 'default',
        jobId: 'web',
        jobVersion: 0,
        status: 'running',
        statusDescription: 'Deployment is running but requires manual promotion',
        groups: [
          {
            name: 'app', desiredTotal: 3, placed: 1, healthy: 0, unhealthy: 0, desiredCanaries: 1, placedCanaries: 1,
            promoted: false, autoRevert: false, autoPromote: false, progressDeadlineMs: 60_000, requireProgressBy: new Date(START + 60_000).toISOString(),
          },
        ],
        updatedAt: expect.stringMatching(ISO),
      },
    ]);
    cluster.startTask(canary!.ID, 'main');
    await driveTo(inspected.clock, START + 3_000);
    cluster.setAllocHealth(canary!.ID, true);
    await driveTo(inspected.clock, START + 3_100);
    cluster.promoteDeployment(canary!.DeploymentID!);
    await driveTo(inspected.clock, START + 3_200);
    const deltas = (): DeploymentInfo[] => live.messages.filter((m) => m.type === 'deployment').map((m) => m.deployment as DeploymentInfo);
    await until(() => deltas().some((d) => d.groups[0]!.promoted));
    expect(deltas().map((d) => [d.groups[0]!.healthy, d.groups[0]!.promoted])).toEqual(expect.arrayContaining([[1, false], [1, true]]));
    cluster.setDeploymentStatus(canary!.DeploymentID!, 'failed', 'Failed due to progress deadline');
    await driveTo(inspected.clock, START + 3_300);
    expect((await fetchSnapshot(inspected.server.url)).deployments[0]).toMatchObject({ status: 'failed', statusDescription: 'Failed due to progress deadline' });
    live.close();
  } finally {
    await inspected.close();
  }
});

/** Every number and every instant anywhere in a document. */
function leaves(value: unknown, key = '', out: [string, unknown][] = []): [string, unknown][] {
  if (Array.isArray(value)) value.forEach((item) => leaves(item, key, out));
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) leaves(v, k, out);
  else out.push([key, value]);
  return out;
}

const INSTANTS = new Set(['now', 'since', 'at', 'startedAt', 'finishedAt', 'watchingSince', 'latestStart', 'healthyAt', 'deadlineAt', 'checksPassingSince', 'updatedAt', 'requireProgressBy']);

test('the snapshot: a schema version, every instant an ISO string, every duration whole milliseconds named …Ms, no fractional number anywhere', async () => {
  const scenario = loadScenario('rolling_update');
  const inspected = await startInspected(scenario.opened);
  try {
    inspected.fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
    await driveTo(inspected.clock, scenario.closed);
    const snapshot: InspectorSnapshot = await fetchSnapshot(inspected.server.url);
    expect(snapshot.schemaVersion).toBe(1);
    expect(snapshot.deployments.length).toBeGreaterThan(0);
    const all = leaves(snapshot);
    expect(all.filter(([key]) => INSTANTS.has(key)).length).toBeGreaterThan(50);
    for (const [key, value] of all) {
      if (INSTANTS.has(key)) expect(value === null || ISO.test(String(value))).toBe(true);
      if (typeof value === 'number') {
        expect(Number.isInteger(value)).toBe(true);
        // Nothing that looks like epoch milliseconds is left as a number.
        expect(Math.abs(value)).toBeLessThan(1e11);
      }
      if (key.endsWith('Ms') && value !== null) expect(Number.isInteger(value) && (value as number) >= 0).toBe(true);
    }
  } finally {
    await inspected.close();
  }
});
