/**
 * The environment Nomad's client interpolates service and check names with (client/taskenv: the
 * allocation's environment built by the alloc runner, then `WithTask` for each task), rebuilt from
 * what the API serves: the allocation, its job version and its node.
 *
 * Allocation level: NOMAD_ALLOC_ID, NOMAD_SHORT_ALLOC_ID, NOMAD_ALLOC_NAME, NOMAD_ALLOC_INDEX,
 * NOMAD_GROUP_NAME, NOMAD_JOB_ID, NOMAD_JOB_NAME, NOMAD_JOB_PARENT_ID, NOMAD_NAMESPACE,
 * NOMAD_REGION, NOMAD_DC (the node's), NOMAD_META_* (job and group meta), the ports
 * (NOMAD_PORT_/NOMAD_ALLOC_PORT_/NOMAD_HOST_PORT_/NOMAD_IP_/NOMAD_HOST_IP_/NOMAD_ADDR_/NOMAD_HOST_ADDR_<label>
 * of the shared ports and networks, NOMAD_*_<task>_<label> of the tasks' own networks); a task
 * adds its meta, its `env` as written, and NOMAD_TASK_NAME. Node values: node.unique.id,
 * node.unique.name, node.region, node.datacenter, node.class, node.pool, attr.*, meta.*.
 *
 * Not rebuilt (the API does not serve them, or only the client knows them): directories, resource
 * limits, Connect upstreams, template and Vault variables, the host's environment.
 */
import type { Allocation, AllocatedPortMapping, Job, NetworkResource, NomadNode, Task, TaskGroup } from '../nomad/types.js';

/** What `${name}` can be replaced with for one task ('' for the group's services). */
export interface TaskEnvironment {
  readonly variables: Readonly<Record<string, string>>;
  readonly node: Readonly<Record<string, string>>;
}

/** helper/args ReplaceEnv: `${name}` of these characters; an unknown name stays as written. */
const REFERENCE = /\$\{([a-zA-Z0-9_\-.]+)\}/g;
/** References that only the node's own record can fill. */
const NODE_ONLY = /\$\{(?:NOMAD_DC|node\.(?:datacenter|class|pool)|attr\.[a-zA-Z0-9_\-.]+|meta\.[a-zA-Z0-9_\-.]+)\}/;

/** Whether `text` refers to any variable at all. */
export function refersToVariables(text: string): boolean {
  return text.includes('${');
}

/** Whether `text` needs the node's record (its datacenter, class, pool, attributes or meta). */
export function refersToNode(text: string): boolean {
  return NODE_ONLY.test(text);
}

export function interpolate(text: string, environment: TaskEnvironment): string {
  if (!text.includes('${')) return text;
  return text.replace(REFERENCE, (whole, name: string) => environment.variables[name] ?? environment.node[name] ?? whole);
}

/** helper.CleanEnvVar: what an environment variable name may hold, everything else an underscore. */
function cleanName(name: string): string {
  let cleaned = '';
  for (let i = 0; i < name.length; i++) {
    const c = name[i] as string;
    const keep = c === '_' || c === '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9');
    cleaned += keep ? c : '_';
  }
  return cleaned;
}

const CLEANED_PREFIXES = ['NOMAD_ADDR_', 'NOMAD_IP_', 'NOMAD_PORT_', 'NOMAD_HOST_PORT_', 'NOMAD_META_'];

/** structs.AllocIndexFromName: the index in "<job>.<group>[<index>]", 0 when there is none. */
function allocIndex(allocation: Allocation): number {
  const name = allocation.Name ?? '';
  const prefix = allocation.JobID.length + allocation.TaskGroup.length + 2;
  if (name.length <= 3 || name.length <= prefix) return 0;
  const index = Number.parseInt(name.slice(prefix, -1), 10);
  return Number.isFinite(index) ? index : 0;
}

function hostPort(ip: string, port: number): string {
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** structs Job.CombinedTaskMeta: the task's meta over its group's over the job's. */
function combinedMeta(job: Job, group: TaskGroup, task: Task | undefined): Record<string, string> {
  return { ...(job.Meta ?? {}), ...(group.Meta ?? {}), ...(task?.Meta ?? {}) };
}

function addMeta(variables: Record<string, string>, meta: Record<string, string>): void {
  for (const [key, value] of Object.entries(meta)) {
    variables[`NOMAD_META_${key.toUpperCase()}`] = value;
    variables[`NOMAD_META_${key}`] = value;
  }
}

/** taskenv addPorts: a shared port mapping. */
function addSharedPort(variables: Record<string, string>, port: AllocatedPortMapping): void {
  const host = port.Value ?? 0;
  const ip = port.HostIP ?? '';
  const mapped = String(port.To !== undefined && port.To > 0 ? port.To : host);
  variables[`NOMAD_ADDR_${port.Label}`] = hostPort(ip, host);
  variables[`NOMAD_HOST_ADDR_${port.Label}`] = hostPort(ip, host);
  variables[`NOMAD_IP_${port.Label}`] = ip;
  variables[`NOMAD_HOST_IP_${port.Label}`] = ip;
  variables[`NOMAD_PORT_${port.Label}`] = mapped;
  variables[`NOMAD_ALLOC_PORT_${port.Label}`] = mapped;
  variables[`NOMAD_HOST_PORT_${port.Label}`] = String(host);
}

function portsOf(network: NetworkResource): NonNullable<NetworkResource['DynamicPorts']> {
  return [...(network.ReservedPorts ?? []), ...(network.DynamicPorts ?? [])];
}

function addPorts(variables: Record<string, string>, allocation: Allocation): void {
  const resources = allocation.AllocatedResources;
  if (resources === undefined || resources === null) return;
  // COMPAT ports of the tasks' own networks, named after their task.
  for (const [task, taskResources] of Object.entries(resources.Tasks ?? {})) {
    for (const network of (taskResources.Networks as NetworkResource[] | null | undefined) ?? []) {
      for (const port of portsOf(network)) {
        variables[`NOMAD_ADDR_${task}_${port.Label}`] = hostPort(network.IP ?? '', port.Value ?? 0);
        variables[`NOMAD_IP_${task}_${port.Label}`] = network.IP ?? '';
        variables[`NOMAD_PORT_${task}_${port.Label}`] = String(port.Value ?? 0);
      }
    }
  }
  for (const network of resources.Shared?.Networks ?? []) {
    for (const port of portsOf(network)) variables[`NOMAD_PORT_${port.Label}`] = String(port.To !== undefined && port.To > 0 ? port.To : (port.Value ?? 0));
  }
  for (const port of resources.Shared?.Ports ?? []) addSharedPort(variables, port);
}

function cleaned(variables: Record<string, string>): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(variables)) {
    result[CLEANED_PREFIXES.some((prefix) => name.startsWith(prefix)) ? cleanName(name) : name] = value;
  }
  return result;
}

function nodeValues(allocation: Allocation, job: Job, node: NomadNode | undefined): Record<string, string> {
  const values: Record<string, string> = {};
  if (job.Region) values['node.region'] = job.Region;
  values['node.unique.id'] = node?.ID ?? allocation.NodeID ?? '';
  values['node.unique.name'] = node?.Name ?? allocation.NodeName ?? '';
  if (node === undefined) return values;
  values['node.class'] = node.NodeClass ?? '';
  values['node.datacenter'] = node.Datacenter ?? '';
  values['node.pool'] = node.NodePool ?? '';
  for (const [key, value] of Object.entries(node.Attributes ?? {})) values[`attr.${key}`] = value;
  for (const [key, value] of Object.entries(node.Meta ?? {})) values[`meta.${key}`] = value;
  return values;
}

/**
 * The allocation's environments: '' for its group, then one per task of `group`. `node` is the
 * allocation's node (undefined when it could not be read: names that need it stay uninterpolated).
 */
export function taskEnvironments(job: Job, group: TaskGroup, allocation: Allocation, node: NomadNode | undefined): Map<string, TaskEnvironment> {
  const variables: Record<string, string> = {
    NOMAD_ALLOC_ID: allocation.ID,
    NOMAD_SHORT_ALLOC_ID: allocation.ID.slice(0, 8),
    NOMAD_GROUP_NAME: allocation.TaskGroup,
    NOMAD_ALLOC_INDEX: String(allocIndex(allocation)),
    NOMAD_JOB_ID: job.ID,
  };
  if (allocation.Name) variables.NOMAD_ALLOC_NAME = allocation.Name;
  if (job.Name) variables.NOMAD_JOB_NAME = job.Name;
  if (job.ParentID) variables.NOMAD_JOB_PARENT_ID = job.ParentID;
  if (node?.Datacenter) variables.NOMAD_DC = node.Datacenter;
  if (allocation.Namespace) variables.NOMAD_NAMESPACE = allocation.Namespace;
  if (job.Region) variables.NOMAD_REGION = job.Region;
  addPorts(variables, allocation);
  addMeta(variables, combinedMeta(job, group, undefined));
  const nodeVariables = nodeValues(allocation, job, node);
  const groupEnvironment = { variables: cleaned(variables), node: nodeVariables };
  const environments = new Map<string, TaskEnvironment>([['', groupEnvironment]]);
  for (const task of Array.isArray(group.Tasks) ? group.Tasks : []) {
    // taskenv WithTask: the allocation's variables, the task's meta, its env as written, its name.
    const own: Record<string, string> = { ...groupEnvironment.variables };
    addMeta(own, combinedMeta(job, group, task));
    Object.assign(own, task.Env ?? {});
    own.NOMAD_TASK_NAME = task.Name;
    environments.set(task.Name, { variables: own, node: nodeVariables });
  }
  return environments;
}
