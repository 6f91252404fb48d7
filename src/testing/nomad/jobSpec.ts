/**
 * What Nomad's agent does to a submitted api.Job before storing it: type-check the JSON the way
 * Go's encoding/json would, fill the defaults of Job.Canonicalize, and validate (1.1.2 texts).
 * Unset fields arrive as null (the output of /v1/jobs/parse) or absent; both mean "default".
 */
import { NomadApiError } from './errors.js';
import { goDuration, multiError } from './goText.js';

export type JsonObject = Record<string, unknown>;

const SECOND = 1_000_000_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** A job spec Nomad refuses: 400 for JSON of the wrong shape, 500 for a failed validation (as 1.1.2). */
export class JobSpecError extends NomadApiError {
  override readonly name = 'JobSpecError';
}

type GoType = string;

// Go types of the api.Job fields a test is likely to get wrong; the rest is accepted as sent.
const JOB_FIELDS: Record<string, GoType> = {
  ID: '*string', Name: '*string', Type: '*string', Region: '*string', Namespace: '*string',
  Priority: '*int', AllAtOnce: '*bool', Datacenters: '[]string', Meta: 'map[string]string',
  TaskGroups: '[]*api.TaskGroup', Update: '*api.UpdateStrategy', Stop: '*bool',
};
const GROUP_FIELDS: Record<string, GoType> = {
  Name: '*string', Count: '*int', Tasks: '[]*api.Task', Update: '*api.UpdateStrategy', Meta: 'map[string]string',
};
const TASK_FIELDS: Record<string, GoType> = {
  Name: 'string', Driver: 'string', User: 'string', Env: 'map[string]string', Meta: 'map[string]string',
  Config: 'map[string]interface {}', Resources: '*api.Resources', Lifecycle: '*api.TaskLifecycle',
};

function jsonKind(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'boolean') return 'bool';
  return typeof value === 'object' ? 'object' : typeof value;
}

function fits(value: unknown, type: GoType): boolean {
  if (value === null || value === undefined) return true;
  const bare = type.replace(/^\*/, '');
  if (bare === 'string') return typeof value === 'string';
  if (bare === 'int') return typeof value === 'number' && Number.isInteger(value);
  if (bare === 'bool') return typeof value === 'boolean';
  if (bare.startsWith('[]')) return Array.isArray(value);
  return typeof value === 'object' && !Array.isArray(value);
}

function checkFields(value: JsonObject, fields: Record<string, GoType>, struct: string, path: string): void {
  for (const [name, type] of Object.entries(fields)) {
    if (!fits(value[name], type)) {
      throw new JobSpecError(400, `json: cannot unmarshal ${jsonKind(value[name])} into Go struct field ${struct}.${path}.${name} of type ${type}`);
    }
  }
}

/** Mirrors encoding/json's UnmarshalTypeError for the register body's `Job`. */
export function checkJobTypes(job: unknown): asserts job is JsonObject {
  if (typeof job !== 'object' || job === null || Array.isArray(job)) {
    throw new JobSpecError(400, `json: cannot unmarshal ${jsonKind(job)} into Go struct field JobRegisterRequest.Job of type api.Job`);
  }
  checkFields(job as JsonObject, JOB_FIELDS, 'Job', 'Job');
  for (const group of ((job as JsonObject).TaskGroups as unknown[] | null) ?? []) {
    if (!fits(group, 'object')) throw new JobSpecError(400, `json: cannot unmarshal ${jsonKind(group)} into Go struct field Job.Job.TaskGroups of type api.TaskGroup`);
    checkFields(group as JsonObject, GROUP_FIELDS, 'TaskGroup', 'Job.TaskGroups');
    for (const task of ((group as JsonObject).Tasks as unknown[] | null) ?? []) {
      if (!fits(task, 'object')) throw new JobSpecError(400, `json: cannot unmarshal ${jsonKind(task)} into Go struct field TaskGroup.Job.TaskGroups.Tasks of type api.Task`);
      checkFields(task as JsonObject, TASK_FIELDS, 'Task', 'Job.TaskGroups.Tasks');
    }
  }
}

/** Fields of `input` that are set (not null/undefined) laid over `defaults`. */
function overlay(defaults: JsonObject, input: unknown): JsonObject {
  const result: JsonObject = { ...defaults };
  if (typeof input !== 'object' || input === null) return result;
  for (const [key, value] of Object.entries(input)) if (value !== null && value !== undefined) result[key] = value;
  return result;
}

const DEFAULT_UPDATE: JsonObject = {
  AutoPromote: false, AutoRevert: false, Canary: 0, HealthCheck: 'checks', HealthyDeadline: 5 * MINUTE,
  MaxParallel: 1, MinHealthyTime: 10 * SECOND, ProgressDeadline: 10 * MINUTE, Stagger: 30 * SECOND,
};
const DEFAULT_MIGRATE: JsonObject = { HealthCheck: 'checks', HealthyDeadline: 5 * MINUTE, MaxParallel: 1, MinHealthyTime: 10 * SECOND };

const RESTART: Record<string, JsonObject> = {
  service: { Attempts: 2, Delay: 15 * SECOND, Interval: 30 * MINUTE, Mode: 'fail' },
  batch: { Attempts: 3, Delay: 15 * SECOND, Interval: 24 * HOUR, Mode: 'fail' },
};
const RESCHEDULE: Record<string, JsonObject | null> = {
  service: { Attempts: 0, Delay: 30 * SECOND, DelayFunction: 'exponential', Interval: 0, MaxDelay: HOUR, Unlimited: true },
  batch: { Attempts: 1, Delay: 5 * SECOND, DelayFunction: 'constant', Interval: 24 * HOUR, MaxDelay: 0, Unlimited: false },
};

const NULL_FIELDS = ['Affinities', 'Constraints', 'Meta', 'Spreads'] as const;

function nulls(names: readonly string[]): JsonObject {
  return Object.fromEntries(names.map((name) => [name, null]));
}

// The defaults each level starts from (built once: a registration only overlays them).
const TASK_DEFAULTS: JsonObject = {
  ...nulls(['Affinities', 'Constraints', 'Meta', 'Artifacts', 'CSIPluginConfig', 'Config', 'DispatchPayload', 'Env', 'ScalingPolicies', 'Services', 'Templates', 'Vault', 'VolumeMounts']),
  Driver: '', KillSignal: '', KillTimeout: 5 * SECOND, Kind: '', Leader: false, Lifecycle: null,
  LogConfig: { MaxFileSizeMB: 10, MaxFiles: 10 }, Name: '', ShutdownDelay: 0, User: '',
};
const GROUP_DEFAULTS: JsonObject = { ...nulls([...NULL_FIELDS, 'Networks', 'Scaling', 'Services', 'ShutdownDelay', 'StopAfterClientDisconnect', 'Volumes']), Count: 1, Name: '' };
const JOB_DEFAULTS: JsonObject = {
  ...nulls([...NULL_FIELDS, 'Multiregion', 'ParameterizedJob', 'Payload', 'Periodic']),
  AllAtOnce: false, ConsulNamespace: '', ConsulToken: '', Datacenters: null, Dispatched: false, Name: '',
  NomadTokenID: '', ParentID: '', Priority: 50, Region: 'global', Stable: false, Status: 'pending',
  StatusDescription: '', Stop: false, VaultNamespace: '', VaultToken: '', Version: 0,
};

function canonicalTask(input: JsonObject, restart: JsonObject): JsonObject {
  const lifecycle = input.Lifecycle as JsonObject | null | undefined;
  return {
    ...overlay(TASK_DEFAULTS, input),
    Lifecycle: lifecycle && lifecycle.Hook ? { Hook: lifecycle.Hook, Sidecar: lifecycle.Sidecar === true } : null,
    LogConfig: overlay({ MaxFileSizeMB: 10, MaxFiles: 10 }, input.LogConfig),
    Resources: overlay({ CPU: 100, Cores: 0, Devices: null, DiskMB: 0, IOPS: 0, MemoryMB: 300, MemoryMaxMB: 0, Networks: null }, input.Resources),
    RestartPolicy: overlay(restart, input.RestartPolicy),
  };
}

function canonicalGroup(input: JsonObject, job: { type: string; update: JsonObject | null }): JsonObject {
  const restart = overlay(RESTART[job.type] ?? RESTART.service!, input.RestartPolicy);
  const reschedule = RESCHEDULE[job.type] ?? null;
  const update = job.update === null ? null : overlay(job.update, input.Update);
  return {
    ...overlay(GROUP_DEFAULTS, input),
    Consul: overlay({ Namespace: '' }, input.Consul),
    EphemeralDisk: overlay({ Migrate: false, SizeMB: 300, Sticky: false }, input.EphemeralDisk),
    Migrate: job.type === 'service' ? overlay(DEFAULT_MIGRATE, input.Migrate) : null,
    ReschedulePolicy: reschedule === null ? null : overlay(reschedule, input.ReschedulePolicy),
    RestartPolicy: restart,
    Tasks: ((input.Tasks as JsonObject[] | null) ?? []).map((task) => canonicalTask(task, restart)),
    Update: update !== null && update.MaxParallel === 0 ? null : update,
  };
}

/**
 * The structs.Job Nomad stores for a submitted api.Job (indexes and status are set by the caller).
 * `systemDeployments`: system jobs get the default update strategy too (Nomad 1.11+).
 */
export function canonicalizeJob(input: JsonObject, namespace: string, options: { systemDeployments?: boolean } = {}): JsonObject {
  const type = typeof input.Type === 'string' && input.Type !== '' ? input.Type : 'service';
  const jobUpdate = input.Update as JsonObject | null | undefined;
  // Service jobs (and system ones from 1.11) get the default strategy; the job-level block is merged into every group.
  const defaulted = type === 'service' || (type === 'system' && options.systemDeployments === true);
  const groupUpdate = defaulted ? overlay(DEFAULT_UPDATE, jobUpdate) : jobUpdate ? overlay(DEFAULT_UPDATE, jobUpdate) : null;
  const legacyUpdate =
    defaulted
      ? { AutoPromote: false, AutoRevert: false, Canary: 0, HealthCheck: '', HealthyDeadline: 0, MaxParallel: groupUpdate?.MaxParallel ?? 1, MinHealthyTime: 0, ProgressDeadline: 0, Stagger: groupUpdate?.Stagger ?? 30 * SECOND }
      : { AutoPromote: false, AutoRevert: false, Canary: 0, HealthCheck: '', HealthyDeadline: 0, MaxParallel: 0, MinHealthyTime: 0, ProgressDeadline: 0, Stagger: 0 };
  const id = input.ID as string;
  const job = overlay({ ...JOB_DEFAULTS, Name: id }, input);
  delete job.Migrate;
  delete job.Reschedule;
  return {
    ...job,
    Namespace: namespace,
    Type: type,
    Update: legacyUpdate,
    TaskGroups: ((input.TaskGroups as JsonObject[] | null) ?? []).map((group) => canonicalGroup(group, { type, update: groupUpdate })),
  };
}

/** Job.Validate of Nomad 1.1.2, for the mistakes a test makes; texts as Nomad writes them. */
export function validateJob(job: JsonObject): void {
  const errors: string[] = [];
  if (!job.ID) errors.push('Missing job ID');
  else if (/\s/.test(String(job.ID))) errors.push('Job ID contains a space');
  if (!Array.isArray(job.Datacenters) || job.Datacenters.length === 0) errors.push('Missing job datacenters');
  const groups = job.TaskGroups as JsonObject[];
  if (groups.length === 0) errors.push('Missing job task groups');
  for (const group of groups) {
    const groupErrors: string[] = [];
    const tasks = group.Tasks as JsonObject[];
    if ((group.Count as number) < 0) groupErrors.push('Task group count can\'t be negative');
    if (tasks.length === 0) groupErrors.push('Missing tasks for task group');
    const update = group.Update as JsonObject | null;
    if (update) {
      const min = update.MinHealthyTime as number;
      const deadline = update.HealthyDeadline as number;
      const progress = update.ProgressDeadline as number;
      const updateErrors: string[] = [];
      if (min >= deadline) updateErrors.push(`Minimum healthy time must be less than healthy deadline: ${goDuration(min)} > ${goDuration(deadline)}`);
      if (progress !== 0 && progress <= deadline) updateErrors.push(`Healthy deadline must be less than progress deadline: ${goDuration(deadline)} > ${goDuration(progress)}`);
      if (updateErrors.length > 0) groupErrors.push(multiError(updateErrors));
    }
    for (const task of tasks) if (!task.Driver) groupErrors.push(`Task ${String(task.Name)} validation failed: ${multiError(['Missing task driver'])}`);
    if (groupErrors.length > 0) errors.push(`Task group ${String(group.Name)} validation failed: ${multiError(groupErrors)}`);
  }
  if (errors.length > 0) throw new JobSpecError(500, multiError(errors));
}
