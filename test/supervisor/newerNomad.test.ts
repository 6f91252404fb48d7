/**
 * The supervisor against newer Nomads (nomad-protocol §10; Nomad's own service checks, 1.4+, are
 * test/nomadChecks; disconnected clients, test/supervisor/disconnected.test.ts): a deployment
 * that is `initializing` (1.5+) is not an end.
 */
import { DeploymentWatch } from '../../src/deployments/deploymentWatch.js';
import type { Deployment } from '../../src/nomad/types.js';

const START = Date.UTC(2026, 10, 29, 19);

describe('a deployment that is initializing (Nomad 1.5+)', () => {
  const deployment = (status: string, modifyIndex: number): Deployment =>
    ({
      ID: 'd1', Namespace: 'default', JobID: 'web', JobVersion: 0, Status: status, StatusDescription: `Deployment is ${status}`,
      TaskGroups: status === 'initializing' ? {} : { app: { DesiredTotal: 1, PlacedAllocs: 0, HealthyAllocs: 0, UnhealthyAllocs: 0, DesiredCanaries: 0, Promoted: false, RequireProgressBy: null } },
      CreateIndex: 5, ModifyIndex: modifyIndex,
    }) as unknown as Deployment;

  it('is not an end: the watch follows the deployment through it to Nomad\'s own end', () => {
    const watch = new DeploymentWatch('web', 'default', 0);
    watch.onDeployment(deployment('initializing', 5));
    expect(watch.ended).toBe(false);
    watch.onDeployment(deployment('running', 6));
    watch.onVerdict('a1', 'd1', 'web.app[0]', { healthy: true, at: START, reasons: {} });
    expect(watch.result(0)).toBeUndefined();
    watch.onDeployment(deployment('successful', 7));
    expect(watch.result(0)).toMatchObject({ ok: true, deploymentId: 'd1', healthy: ['a1'] });
  });
});
