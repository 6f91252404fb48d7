/**
 * Poseidon's on-cluster format (openHPI/poseidon internal/nomad/job.go and its default template job),
 * so that Warden adopts a cluster Poseidon populated and the other way round:
 * - an environment is a template job `template-<id>`; its runners are jobs `<id>-<uuid>` copied
 *   from it;
 * - the runner runs in task group `default-group`, task `default-task` (`sleep infinity` in the
 *   environment's image or on the host);
 * - a task group `config` of count 0 carries the meta Nomad must not hand to the runner's task
 *   (group meta becomes environment variables, so changing it would replace the allocation):
 *   `used` ("true"/"false") and `timeout` (seconds) on runners, `prewarmingPoolSize` on templates.
 */
import type { Job, NetworkResource, Task, TaskGroup } from '../nomad/types.js';
import { driverProfile } from './drivers.js';
import { InvalidEnvironmentError } from './errors.js';

export const TEMPLATE_JOB_PREFIX = 'template';
export const RUNNER_GROUP = 'default-group';
export const RUNNER_TASK = 'default-task';
export const CONFIG_GROUP = 'config';
export const CONFIG_TASK = 'config';
export const META_USED = 'used';
export const META_TIMEOUT = 'timeout';
export const META_POOL_SIZE = 'prewarmingPoolSize';
/** Poseidon's fallback when a used runner's meta has no readable timeout (RunnerTimeoutFallback). */
export const RUNNER_TIMEOUT_FALLBACK_S = 60;

/** The task drivers a runner can run on: docker (Poseidon's), or exec / raw_exec on a host without Docker. */
export type RunnerDriver = 'docker' | 'exec' | 'raw_exec';

/** An execution environment, as Poseidon's API describes one (plus where and how its runners run). */
export interface EnvironmentSpec {
  /** Poseidon's environment IDs are non-negative integers. */
  id: number;
  /** Idle runners kept ready. */
  prewarmingPoolSize: number;
  /** MHz (Nomad's `cpu`). Default 40, Poseidon's template. */
  cpuLimit?: number;
  /** MB, the runner's memory ceiling (Nomad's `memory_max`); 0 = none. */
  memoryLimit?: number;
  /** The docker image; ignored by exec / raw_exec. */
  image?: string;
  networkAccess?: boolean;
  /** Ports inside the runner to map to host ports (network access needed). */
  exposedPorts?: readonly number[];
  /** Default docker. */
  driver?: RunnerDriver;
  /** Extra task config for the driver, laid over the one built here. */
  driverConfig?: Readonly<Record<string, unknown>>;
  /** Default ["dc1"]. */
  datacenters?: readonly string[];
}

/** A spec with every default filled in: what a template job says. */
export type ResolvedEnvironmentSpec = Required<EnvironmentSpec>;

const SECOND = 1_000_000_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DEFAULT_CPU = 40;
const DEFAULT_MEMORY_MB = 50;

export function templateJobId(environmentId: number): string {
  return `${TEMPLATE_JOB_PREFIX}-${environmentId}`;
}

export function runnerJobId(environmentId: number, uuid: string): string {
  return `${environmentId}-${uuid}`;
}

/** The prefix every runner job of an environment starts with (`1-` never matches `10-…`). */
export function runnerJobPrefix(environmentId: number): string {
  return `${environmentId}-`;
}

function parseEnvironmentNumber(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d+$/.test(text)) return undefined;
  const id = Number(text);
  return Number.isSafeInteger(id) ? id : undefined;
}

/** `template-<id>` → id (Poseidon's IsEnvironmentTemplateID: exactly two dash-separated parts). */
export function environmentOfTemplate(jobId: string): number | undefined {
  const parts = jobId.split('-');
  return parts.length === 2 && parts[0] === TEMPLATE_JOB_PREFIX ? parseEnvironmentNumber(parts[1]) : undefined;
}

/** `<id>-<anything>` → id (Poseidon's EnvironmentIDFromRunnerID: the first dash-separated part). */
export function environmentOfRunner(jobId: string): number | undefined {
  const dash = jobId.indexOf('-');
  return dash <= 0 || dash === jobId.length - 1 ? undefined : parseEnvironmentNumber(jobId.slice(0, dash));
}

export function checkEnvironmentSpec(spec: EnvironmentSpec): ResolvedEnvironmentSpec {
  const problems: string[] = [];
  const wholeNumber = (name: string, value: number | undefined, min = 0): void => {
    if (value !== undefined && !(Number.isSafeInteger(value) && value >= min)) problems.push(`${name} must be a whole number ≥ ${min}, not ${String(value)}`);
  };
  wholeNumber('id', spec.id);
  wholeNumber('prewarmingPoolSize', spec.prewarmingPoolSize);
  wholeNumber('cpuLimit', spec.cpuLimit, 1);
  wholeNumber('memoryLimit', spec.memoryLimit);
  for (const port of spec.exposedPorts ?? []) if (!(Number.isInteger(port) && port >= 1 && port <= 65_535)) problems.push(`exposed port ${String(port)} is not a port number`);
  const driver = spec.driver ?? 'docker';
  if (!['docker', 'exec', 'raw_exec'].includes(driver)) problems.push(`driver must be docker, exec or raw_exec, not ${JSON.stringify(driver)}`);
  if (driver === 'docker' && !spec.image) problems.push('a docker environment needs an image');
  if ((spec.exposedPorts ?? []).length > 0 && spec.networkAccess !== true) problems.push('exposed ports need network access');
  if (spec.datacenters !== undefined && spec.datacenters.length === 0) problems.push('datacenters must not be empty');
  const reserved = Object.keys(spec.driverConfig ?? {}).filter((key) => RESERVED_CONFIG.includes(key));
  if (reserved.length > 0) problems.push(`driver config may not set ${reserved.join(', ')}: the runner sets them`);
  if (problems.length > 0) throw new InvalidEnvironmentError(problems.join('; '));
  return {
    id: spec.id,
    prewarmingPoolSize: spec.prewarmingPoolSize,
    cpuLimit: spec.cpuLimit ?? DEFAULT_CPU,
    memoryLimit: spec.memoryLimit ?? 0,
    image: spec.image ?? '',
    networkAccess: spec.networkAccess ?? false,
    exposedPorts: [...new Set(spec.exposedPorts ?? [])].sort((a, b) => a - b),
    driver,
    driverConfig: { ...spec.driverConfig },
    datacenters: [...(spec.datacenters ?? ['dc1'])],
  };
}

/** Task config keys the runner sets itself (the command that keeps it alive, the image, its network). */
const RESERVED_CONFIG: readonly string[] = ['command', 'args', 'image', 'force_pull', 'network_mode'];

/**
 * How template and runner jobs are built beyond what an environment says: Poseidon's
 * `server.templatejobfile`, `nomad.network` and `nomad.disableforcepull`.
 */
export interface JobBuildOptions {
  /**
   * A template job of the operator's own (Poseidon's template job file): its groups, tasks and
   * policies are kept, and what an environment sets (ID, image, limits, network, pool size, the
   * runner's command) is laid over them as Poseidon lays it over its default template.
   */
  base?: Job;
  /** The network of runners with network access (Poseidon's nomad.network). Default: Nomad's bridge for docker, the host's for exec and raw_exec. */
  network?: RunnerNetwork;
  /** Never pull an image again (Poseidon's nomad.disableforcepull): `force_pull` is false on every job. */
  disableForcePull?: boolean;
}

/** Poseidon's nomad.network: the mode (`bridge`, `cni/secure-bridge`, …) and the DNS its runners get. */
export interface RunnerNetwork {
  mode?: string;
  dns?: { servers?: readonly string[]; searches?: readonly string[]; options?: readonly string[] };
}

/** Poseidon's default template job (internal/environment/template-environment-job.hcl), for the spec's driver. */
function defaultTemplate(spec: ResolvedEnvironmentSpec): Job {
  const runnerGroup: TaskGroup = {
    Name: RUNNER_GROUP,
    Count: 1,
    EphemeralDisk: { Migrate: false, SizeMB: 10, Sticky: false },
    // Spread runners evenly over the nodes, as Poseidon's template does.
    Spreads: [{ Attribute: '${node.unique.name}', Weight: 100 }],
    RestartPolicy: { Attempts: 3, Delay: 15 * SECOND, Interval: HOUR, Mode: 'fail' },
    ReschedulePolicy: { Unlimited: false, Attempts: 3, Interval: 6 * HOUR, Delay: MINUTE, MaxDelay: 4 * MINUTE, DelayFunction: 'exponential' },
    Tasks: [{
      Name: RUNNER_TASK,
      Driver: spec.driver,
      // The runner is `sleep infinity`: nothing to wait for when it is stopped.
      KillTimeout: 0,
      KillSignal: 'SIGKILL',
      Config: {},
      LogConfig: { MaxFiles: 1, MaxFileSizeMB: 1 },
      Resources: { CPU: DEFAULT_CPU, MemoryMB: DEFAULT_MEMORY_MB },
    }],
  };
  const configGroup: TaskGroup = {
    Name: CONFIG_GROUP,
    Count: 0,
    Tasks: [{
      Name: CONFIG_TASK,
      // Never placed (count 0); Poseidon's template uses exec, a host-only agent may have raw_exec alone.
      Driver: spec.driver === 'raw_exec' ? 'raw_exec' : 'exec',
      Config: { command: 'true' },
      LogConfig: { MaxFiles: 1, MaxFileSizeMB: 1 },
      Resources: { CPU: 1, MemoryMB: 10 },
    }],
    Meta: { [META_USED]: 'false' },
  };
  return { ID: templateJobId(spec.id), Type: 'batch', TaskGroups: [runnerGroup, configGroup] };
}

function runnerNetworks(spec: ResolvedEnvironmentSpec, network: RunnerNetwork | undefined): NetworkResource[] {
  if (!spec.networkAccess) return [];
  const dns = network?.dns;
  return [{
    // Docker maps each exposed port from a dynamic host port; a host driver listens on the host port itself.
    Mode: network?.mode ?? (spec.driver === 'docker' ? 'bridge' : 'host'),
    ...(dns === undefined ? {} : { DNS: { Servers: [...(dns.servers ?? [])], Searches: [...(dns.searches ?? [])], Options: [...(dns.options ?? [])] } }),
    DynamicPorts: spec.exposedPorts.map((port) => ({ Label: String(port), To: port })),
  }];
}

/** The group named so, added (as Poseidon's FindAndValidate… functions add it) when the job has none. */
function ensureGroup(groups: TaskGroup[], name: string, count: number): TaskGroup {
  const found = groups.find((candidate) => candidate.Name === name);
  if (found !== undefined) return found;
  const added: TaskGroup = { Name: name, Count: count, Tasks: [] };
  groups.push(added);
  return added;
}

function ensureTask(group: TaskGroup, name: string, driver: string): Task {
  const found = group.Tasks.find((candidate) => candidate.Name === name);
  if (found !== undefined) return found;
  const added: Task = { Name: name, Driver: driver, Config: {}, Resources: { CPU: DEFAULT_CPU, MemoryMB: DEFAULT_MEMORY_MB } };
  group.Tasks.push(added);
  return added;
}

/** What an environment sets, laid over a template (Poseidon's NewNomadEnvironmentFromRequest, SetForcePullFlag). */
function layOver(template: Job, spec: ResolvedEnvironmentSpec, forcePull: boolean, options: JobBuildOptions): Job {
  const job = structuredClone(template);
  const groups = job.TaskGroups ?? [];
  const runners = ensureGroup(groups, RUNNER_GROUP, 1);
  const task = ensureTask(runners, RUNNER_TASK, spec.driver);
  const config: Record<string, unknown> = { ...task.Config, command: 'sleep', args: ['infinity'] };
  for (const key of ['image', 'force_pull', 'network_mode']) delete config[key];
  if (spec.driver === 'docker') {
    Object.assign(config, { image: spec.image, force_pull: forcePull && options.disableForcePull !== true });
    // Poseidon: without network access the container gets none; with it, the group's network.
    config.network_mode = spec.networkAccess ? '' : 'none';
  }
  // exec runs a task as nobody unless it names its user: privileged executions need root (see drivers.ts).
  const user = driverProfile(spec.driver).taskUser;
  Object.assign(task, { Driver: spec.driver, ...(user === undefined ? {} : { User: user }), Config: { ...config, ...spec.driverConfig } });
  const { MemoryMaxMB: _max, ...resources } = task.Resources ?? {};
  task.Resources = { ...resources, CPU: spec.cpuLimit, ...(spec.memoryLimit > 0 ? { MemoryMaxMB: spec.memoryLimit } : {}) };
  runners.Networks = runnerNetworks(spec, options.network);
  const configGroup = ensureGroup(groups, CONFIG_GROUP, 0);
  const configTask = ensureTask(configGroup, CONFIG_TASK, 'exec');
  configTask.Config = { ...configTask.Config, command: 'true' };
  configGroup.Meta = { ...configGroup.Meta, [META_USED]: 'false', [META_POOL_SIZE]: String(spec.prewarmingPoolSize) };
  const id = templateJobId(spec.id);
  return { ...job, ID: id, Name: id, Type: job.Type ?? 'batch', Datacenters: [...spec.datacenters], TaskGroups: groups };
}

/**
 * The template job of an environment: Poseidon's default template (or the operator's own, `base`)
 * with the environment laid over it, its image pulled again (force_pull, unless disabled) as
 * Poseidon registers every template.
 */
export function templateJob(spec: ResolvedEnvironmentSpec, options: JobBuildOptions = {}): Job {
  return layOver(options.base ?? defaultTemplate(spec), spec, true, options);
}

/**
 * A runner job: the template under the runner's ID, `used = false`; `forcePull` for the runners a
 * PUT of the environment starts (Poseidon's createRunners(…, true)), not for later refills.
 */
export function runnerJob(spec: ResolvedEnvironmentSpec, runnerId: string, options: JobBuildOptions & { forcePull?: boolean } = {}): Job {
  const template = layOver(options.base ?? defaultTemplate(spec), spec, options.forcePull === true, options);
  const groups = (template.TaskGroups ?? []).map((candidate) => (candidate.Name === CONFIG_GROUP ? { ...candidate, Meta: { [META_USED]: 'false' } } : candidate));
  return { ...template, ID: runnerId, Name: runnerId, TaskGroups: groups };
}

function group(job: Job, name: string): TaskGroup | undefined {
  return (job.TaskGroups ?? []).find((candidate) => candidate.Name === name);
}

/** The config group's meta of a job read from Nomad (empty when it has none). */
export function configMeta(job: Job): Readonly<Record<string, string>> {
  return group(job, CONFIG_GROUP)?.Meta ?? {};
}

/** The job with the config group's meta changed (the group added if missing, as Poseidon does). */
export function withConfigMeta(job: Job, meta: Readonly<Record<string, string>>): Job {
  const groups = job.TaskGroups ?? [];
  const existing = group(job, CONFIG_GROUP);
  const updated: TaskGroup = existing
    ? { ...existing, Meta: { ...existing.Meta, ...meta } }
    : { Name: CONFIG_GROUP, Count: 0, Tasks: [{ Name: CONFIG_TASK, Driver: 'exec', Config: { command: 'true' }, Resources: { CPU: 1, MemoryMB: 10 } }], Meta: { ...meta } };
  return { ...job, TaskGroups: existing ? groups.map((candidate) => (candidate === existing ? updated : candidate)) : [...groups, updated] };
}

/** What a runner job's meta says of it. */
export interface RunnerMeta {
  used: boolean;
  /** Seconds; the fallback when a used runner's meta has none that parses. */
  timeoutS: number;
  /** The meta had no readable timeout (the used mark should be written again). */
  timeoutMissing: boolean;
}

export function runnerMeta(job: Job): RunnerMeta {
  const meta = configMeta(job);
  const timeout = meta[META_TIMEOUT];
  const parsed = timeout !== undefined && /^\d+$/.test(timeout) ? Number(timeout) : undefined;
  return { used: meta[META_USED] === 'true', timeoutS: parsed ?? RUNNER_TIMEOUT_FALLBACK_S, timeoutMissing: parsed === undefined };
}

/**
 * A runner job marked used at version 0: no update ever marked it (Warden and Poseidon register
 * runners unused and mark them with an update, which makes version 1), so a used mark created it,
 * landing after the runner's purge (issue 19). Nobody holds such a runner: it is purged.
 */
export function isRecreatedRunner(job: Job): boolean {
  return (job.Version ?? 0) === 0 && runnerMeta(job).used;
}

/** The environment a template job (or a runner job copied from one) describes. */
export function specOfJob(job: Job, environmentId: number): ResolvedEnvironmentSpec {
  const runners = group(job, RUNNER_GROUP);
  const task = runners?.Tasks.find((candidate) => candidate.Name === RUNNER_TASK);
  const config: Record<string, unknown> = { ...(task?.Config ?? {}) };
  const driver = (task?.Driver ?? 'docker') as RunnerDriver;
  const image = typeof config.image === 'string' ? config.image : '';
  const network = runners?.Networks?.[0];
  const networkAccess = driver === 'docker' ? config.network_mode !== 'none' : network !== undefined;
  const ports = (network?.DynamicPorts ?? []).map((port) => port.To ?? 0).filter((port) => port > 0);
  // What runnerTask builds itself is not driver config of the environment's own.
  for (const key of RESERVED_CONFIG) delete config[key];
  const pool = Number(configMeta(job)[META_POOL_SIZE] ?? 0);
  return {
    id: environmentId,
    prewarmingPoolSize: Number.isSafeInteger(pool) && pool >= 0 ? pool : 0,
    cpuLimit: task?.Resources?.CPU ?? DEFAULT_CPU,
    memoryLimit: task?.Resources?.MemoryMaxMB ?? 0,
    image,
    networkAccess,
    exposedPorts: [...new Set(ports)].sort((a, b) => a - b),
    driver,
    driverConfig: config,
    datacenters: [...(job.Datacenters ?? ['dc1'])],
  };
}

/**
 * What makes runners of a spec differ from another's: everything but the pool size. Runners of an
 * older key are replaced when idle (a template update); the pool size alone replaces nothing.
 */
export function runnerTemplateKey(spec: ResolvedEnvironmentSpec): string {
  const { id: _id, prewarmingPoolSize: _pool, driverConfig, ...rest } = spec;
  const sorted = Object.fromEntries(Object.entries(driverConfig).sort(([a], [b]) => a.localeCompare(b)));
  return JSON.stringify({ ...rest, driverConfig: sorted });
}
