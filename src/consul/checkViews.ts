/**
 * Consul's checks → the check views of each Nomad allocation, by the IDs Nomad registers under
 * (client/serviceregistration/id.go MakeAllocServiceID, command/agent/consul/service_client.go):
 *
 *   service  _nomad-task-<allocID>-<task | group-<group>>-<service>-<portLabel>
 *   sidecar  <service ID>-sidecar-proxy          (Connect; its checks are Consul's own)
 *   check    _nomad-check-<hash>                 (not recomputed: the hash changed across versions)
 *
 * The part after the allocation ID is ambiguous (names may hold dashes), so it is matched against
 * the task and group names of the allocation's group and the ServiceName Consul reports (which is
 * the interpolated name Nomad registered).
 */
import type { CheckStatus, CheckView } from '../../machines/allocationHealthTypes.js';
import type { TaskGroup } from '../nomad/types.js';
import type { ConsulHealthCheck } from './client.js';

const SERVICE_PREFIX = '_nomad-task-';
const CHECK_PREFIX = '_nomad-check-';
const SIDECAR_SUFFIX = '-sidecar-proxy';
const ALLOC_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const STATUSES: ReadonlySet<string> = new Set<CheckStatus>(['passing', 'warning', 'critical']);

/** A check of a service Nomad registered for an allocation. */
export interface AllocationCheck {
  /** `<workload>-<service>-<port>` of the service ID (of the parent service, for a sidecar). */
  readonly registration: string;
  /** The service is the Connect sidecar of the registration. */
  readonly sidecar: boolean;
  readonly check: ConsulHealthCheck;
}

/** The names the workload part of a service ID can take for one allocation's group. */
export interface AllocationWorkloads {
  readonly group: string;
  readonly tasks: readonly string[];
}

function byIds(a: AllocationCheck, b: AllocationCheck): number {
  const service = a.check.ServiceID < b.check.ServiceID ? -1 : a.check.ServiceID > b.check.ServiceID ? 1 : 0;
  return service !== 0 ? service : a.check.CheckID < b.check.CheckID ? -1 : a.check.CheckID > b.check.CheckID ? 1 : 0;
}

function isCheck(value: unknown): value is ConsulHealthCheck {
  if (typeof value !== 'object' || value === null) return false;
  const check = value as Record<string, unknown>;
  return typeof check.ServiceID === 'string' && typeof check.ServiceName === 'string' && typeof check.CheckID === 'string' && typeof check.Name === 'string' && typeof check.Status === 'string';
}

/**
 * The checks of Nomad-registered services, grouped by allocation ID, each allocation's in a fixed
 * order (service ID, check ID). Node checks, other services, maintenance checks (`_service_maintenance:…`)
 * and malformed entries are left out: Nomad counts only the checks it registered itself.
 */
export function checksByAllocation(checks: readonly unknown[]): Map<string, AllocationCheck[]> {
  const byAllocation = new Map<string, AllocationCheck[]>();
  for (const check of checks) {
    if (!isCheck(check) || !check.ServiceID.startsWith(SERVICE_PREFIX)) continue;
    const allocId = check.ServiceID.slice(SERVICE_PREFIX.length, SERVICE_PREFIX.length + 36);
    const rest = check.ServiceID.slice(SERVICE_PREFIX.length + 36);
    if (!ALLOC_ID.test(allocId) || !rest.startsWith('-')) continue;
    const sidecar = rest.endsWith(SIDECAR_SUFFIX);
    if (!sidecar && !check.CheckID.startsWith(CHECK_PREFIX)) continue;
    const registration = rest.slice(1, sidecar ? -SIDECAR_SUFFIX.length : undefined);
    const list = byAllocation.get(allocId);
    const entry = { registration, sidecar, check };
    if (list === undefined) byAllocation.set(allocId, [entry]);
    else list.push(entry);
  }
  for (const list of byAllocation.values()) list.sort(byIds);
  return byAllocation;
}

/** The task ('' for the group) whose service this is: the longest workload name that fits. */
function workloadOf(registration: string, service: string, workloads: AllocationWorkloads): string | undefined {
  const group = `group-${workloads.group}`;
  let found: string | undefined;
  for (const workload of [group, ...workloads.tasks]) {
    if (registration.startsWith(`${workload}-${service}-`) && (found === undefined || workload.length > found.length)) found = workload;
  }
  return found === group ? '' : found;
}

function statusOf(status: string): CheckStatus {
  // Consul knows no other status for a check; anything else cannot be counted as passing.
  return STATUSES.has(status) ? (status as CheckStatus) : 'critical';
}

/**
 * The check views of one allocation (tracker.go evaluateConsulChecks). A Connect sidecar's checks
 * are not in the job spec and must simply pass: a failing one is kept as an extra view, which no
 * expected check matches, so the allocation cannot count as passing while it fails.
 */
export function checkViewsFor(checks: readonly AllocationCheck[], workloads: AllocationWorkloads): CheckView[] {
  const views: CheckView[] = [];
  for (const { registration, sidecar, check } of checks) {
    const service = sidecar && check.ServiceName.endsWith(SIDECAR_SUFFIX) ? check.ServiceName.slice(0, -SIDECAR_SUFFIX.length) : check.ServiceName;
    const task = workloadOf(registration, service, workloads);
    if (task === undefined) continue;
    const status = statusOf(check.Status);
    if (sidecar && status === 'passing') continue;
    views.push({ task, service: sidecar ? check.ServiceName : service, name: check.Name, status });
  }
  return views;
}

/** Whether two lists of one allocation's checks say the same to the health rules. */
export function sameAllocationChecks(a: readonly AllocationCheck[] | undefined, b: readonly AllocationCheck[] | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a.length !== b.length) return false;
  return a.every((entry, i) => {
    const other = (b[i] as AllocationCheck).check;
    const { check } = entry;
    return check.ServiceID === other.ServiceID && check.CheckID === other.CheckID && check.Name === other.Name && check.ServiceName === other.ServiceName && check.Status === other.Status;
  });
}

/**
 * Whether the group's checks are Nomad's own (service provider = "nomad"): Nomad runs them itself
 * and never registers them in Consul, so Consul cannot tell whether they pass.
 */
export function hasNomadProviderChecks(group: Pick<TaskGroup, 'Services' | 'Tasks'>): boolean {
  const services = [...(group.Services ?? []), ...(Array.isArray(group.Tasks) ? group.Tasks : []).flatMap((task) => task.Services ?? [])];
  return services.some((service) => service.Provider === 'nomad' && (service.Checks?.length ?? 0) > 0);
}
