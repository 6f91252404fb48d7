/**
 * A fixed cluster for the page tests, on a VirtualClock (so the same pixels every run): a deployment
 * of `web` with two allocations healthy and one unhealthy (a task failed), an `api` allocation
 * waiting out its min_healthy_time, an allocation of a job whose name is HTML, a monitored
 * evaluation that could not place its allocations, and the inspector serving it all.
 */
import { serviceJob } from '../testing/helpers.js';
import { driveTo } from '../supervisor/support/harness.js';
import { startInspected, type Inspected } from './support.js';

export const PAGE_START = Date.UTC(2026, 10, 29, 18);
export const HOSTILE_JOB = '<img/src=x/onerror=alert(1)>';

const task = (name: string): Record<string, unknown> => ({ Name: name, Driver: 'raw_exec', Config: { command: '/bin/sh' }, Resources: { CPU: 20, MemoryMB: 16 } });

export interface PageFixture {
  inspected: Inspected;
  /** web.app[0], web.app[1]: healthy; web.app[2]: unhealthy. */
  web: string[];
  /** Still in minHealthyWait when the fixture is ready (healthy at PAGE_START + 33 s). */
  api: string;
  hostile: string;
}

/** `tickMs`: how often the server tells the page the time (default never, so nothing moves unasked). */
export async function pageFixture(options: { tickMs?: number } = {}): Promise<PageFixture> {
  const inspected = await startInspected(PAGE_START, { server: { tickMs: options.tickMs ?? 0 } });
  try {
    return await populate(inspected);
  } catch (error) {
    await inspected.close();
    throw error;
  }
}

async function populate(inspected: Inspected): Promise<PageFixture> {
  const { cluster } = inspected.fake;
  const at = (ms: number): Promise<void> => driveTo(inspected.clock, PAGE_START + ms);
  cluster.registerJob(
    serviceJob('web', {
      Update: { HealthCheck: 'task_states', MinHealthyTime: 2e9, HealthyDeadline: 20e9, ProgressDeadline: 60e9 },
      TaskGroups: [{ Name: 'app', Count: 3, Tasks: [task('server'), task('log-shipper')] }],
    }),
  );
  const web = cluster.placeAllocations('web').map((alloc) => alloc.ID);
  // Its client has them at once: Nomad watches an allocation from then.
  for (const id of web) cluster.receiveAllocation(id);
  await at(400);
  for (const id of web) cluster.startTask(id, 'server');
  await at(900);
  for (const id of web.slice(0, 2)) cluster.startTask(id, 'log-shipper');
  await at(1_200);
  cluster.startTask(web[2]!, 'log-shipper');
  await at(1_700);
  cluster.failTask(web[2]!, 'server', { exitCode: 137 });
  await at(3_500);
  for (const id of web.slice(0, 2)) cluster.setAllocHealth(id, true);
  cluster.setAllocHealth(web[2]!, false);

  cluster.registerJob(
    serviceJob('api', {
      Update: { HealthCheck: 'task_states', MinHealthyTime: 30e9, HealthyDeadline: 300e9, ProgressDeadline: 600e9 },
      TaskGroups: [{ Name: 'http', Count: 1, Tasks: [task('api')] }],
    }),
  );
  const [api] = cluster.placeAllocations('api');
  cluster.receiveAllocation(api!.ID);
  await at(4_000);
  cluster.startTask(api!.ID, 'api');

  cluster.registerJob(serviceJob(HOSTILE_JOB, { TaskGroups: [{ Name: 'g<b>', Count: 1, Tasks: [task('"><script>alert(2)</script>')] }] }));
  const [hostile] = cluster.placeAllocations(HOSTILE_JOB);
  cluster.receiveAllocation(hostile!.ID);

  cluster.registerJob(serviceJob('batch-report', { TaskGroups: [{ Name: 'report', Count: 1, Tasks: [task('report')] }] }));
  const { evaluation } = cluster.failPlacement('batch-report', { group: 'report', dimension: 'memory' });
  await at(5_000);
  void inspected.supervisor.monitorEvaluation(evaluation.ID).catch(() => undefined);
  await at(6_000);
  return { inspected, web, api: api!.ID, hostile: hostile!.ID };
}
