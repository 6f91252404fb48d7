/** Consul checks → per-allocation check views, by Nomad's service and check IDs; and the fan-out. */
import type { ConsulHealthCheck } from '../../src/consul/client.js';
import { checksByAllocation, checkViewsFor } from '../../src/consul/checkViews.js';
import { ConsulCheckFanOut } from '../../src/consul/checkFanOut.js';

const A = '1b4e61df-b095-d64e-f241-23860da1375f';
const B = '2c5f72e0-c1a6-e75f-0352-34971eb2486a';
let sequence = 0;

function check(serviceId: string, serviceName: string, name: string, status: string, checkId?: string): ConsulHealthCheck {
  sequence += 1;
  return { Node: 'n1', CheckID: checkId ?? `_nomad-check-${sequence.toString(16).padStart(40, '0')}`, Name: name, Status: status, ServiceID: serviceId, ServiceName: serviceName };
}

const workloads = { group: 'app', tasks: ['web', 'web-api'] };

describe('checksByAllocation / checkViewsFor', () => {
  test('task and group services by the workload part of the ID; names with dashes resolved by the longest task name', () => {
    const checks = [
      check(`_nomad-task-${A}-web-api-http`, 'api', 'alive', 'passing'),
      check(`_nomad-task-${A}-web-api-api-http`, 'api', 'ready', 'warning'),
      check(`_nomad-task-${A}-group-app-front-metrics-port`, 'front', 'up', 'critical'),
    ];
    const views = checkViewsFor(checksByAllocation(checks).get(A) ?? [], workloads);
    expect(views).toEqual(expect.arrayContaining([
      { task: 'web', service: 'api', name: 'alive', status: 'passing' },
      { task: 'web-api', service: 'api', name: 'ready', status: 'warning' },
      { task: '', service: 'front', name: 'up', status: 'critical' },
    ]));
    expect(views).toHaveLength(3);
  });

  test('other allocations, node checks, foreign services, maintenance checks and malformed entries are left out', () => {
    const checks: unknown[] = [
      check(`_nomad-task-${A}-web-api-http`, 'api', 'alive', 'passing'),
      check(`_nomad-task-${B}-web-api-http`, 'api', 'alive', 'critical'),
      check('', '', 'Serf Health Status', 'passing', 'serfHealth'),
      check('redis', 'redis', 'tcp', 'passing'),
      check(`_nomad-task-${A}-web-api-http`, 'api', 'Service Maintenance Mode', 'critical', `_service_maintenance:_nomad-task-${A}-web-api-http`),
      check(`_nomad-task-not-an-alloc-id-at-all-xxxxxxxxxxxx-web-api-http`, 'api', 'alive', 'passing'),
      { ServiceID: 42 },
      null,
    ];
    const byAlloc = checksByAllocation(checks);
    expect([...byAlloc.keys()].sort()).toEqual([A, B].sort());
    expect(checkViewsFor(byAlloc.get(A) ?? [], workloads)).toEqual([{ task: 'web', service: 'api', name: 'alive', status: 'passing' }]);
    // A service of a task this group does not have is not counted.
    expect(checkViewsFor(checksByAllocation([check(`_nomad-task-${A}-db-pg-http`, 'pg', 'alive', 'passing')]).get(A) ?? [], workloads)).toEqual([]);
  });

  test('duplicate check names are each kept (Nomad counts by name); an unknown status counts as critical', () => {
    const checks = [check(`_nomad-task-${A}-web-api-http`, 'api', 'alive', 'passing'), check(`_nomad-task-${A}-web-api-grpc`, 'api', 'alive', 'maintenance')];
    expect(checkViewsFor(checksByAllocation(checks).get(A) ?? [], workloads).map((view) => view.status).sort()).toEqual(['critical', 'passing']);
  });

  test('a Connect sidecar\'s checks: invisible while passing, an extra (unexpected) view while failing', () => {
    const parent = `_nomad-task-${A}-group-app-front-http`;
    const passing = [check(parent, 'front', 'up', 'passing'), check(`${parent}-sidecar-proxy`, 'front-sidecar-proxy', 'Connect Sidecar Listening', 'passing', 'service:x:1')];
    expect(checkViewsFor(checksByAllocation(passing).get(A) ?? [], workloads)).toEqual([{ task: '', service: 'front', name: 'up', status: 'passing' }]);
    const failing = [passing[0]!, { ...passing[1]!, Status: 'critical' }];
    expect(checkViewsFor(checksByAllocation(failing).get(A) ?? [], workloads)).toContainEqual({ task: '', service: 'front-sidecar-proxy', name: 'Connect Sidecar Listening', status: 'critical' });
  });
});

describe('ConsulCheckFanOut', () => {
  test('each answer reaches only the followed allocations whose own checks changed', () => {
    const told: string[] = [];
    const fanOut = new ConsulCheckFanOut((id, views, seenAt) => told.push(`${id.slice(0, 1)}:${views.map((v) => v.status).join(',')}${seenAt === undefined ? '' : `@${seenAt}`}`));
    const a = check(`_nomad-task-${A}-web-api-http`, 'api', 'alive', 'critical');
    const b = check(`_nomad-task-${B}-web-api-http`, 'api', 'alive', 'critical');
    fanOut.update([a, b]);
    expect(fanOut.follow(A, { Name: 'app', Tasks: [{ Name: 'web' }] as never })).toEqual([{ task: 'web', service: 'api', name: 'alive', status: 'critical' }]);
    fanOut.follow(B, { Name: 'app', Tasks: [{ Name: 'web' }] as never });
    fanOut.update([{ ...a, Status: 'passing' }, b]);
    expect(told).toEqual(['1:passing']);
    // The answer's arrival time goes with it.
    fanOut.update([{ ...a, Status: 'passing' }], 1234);
    expect(told).toEqual(['1:passing', '2:@1234']);
    fanOut.forget(A);
    fanOut.update([]);
    expect(told).toEqual(['1:passing', '2:@1234']);
  });
});
