/**
 * Poseidon's miscellaneous and execution-environment routes (internal/api/api.go, health.go,
 * environments.go) over the pools: health with the prewarming-pool alert (and the environments whose
 * runners cannot start, with Nomad's reason), version, statistics,
 * list / get (with `fetch`: environments put on the cluster by someone else adopted first), create
 * or update (201 / 204, no body), delete (204, or 404 with no body).
 */
import type { EnvironmentSummary } from '../runners/pools.js';
import { unprivilegedProblemText } from '../runners/unprivilegedCheck.js';
import { visibleEnvironments, type ApiRequest, type Handler } from './context.js';
import { ApiError, badRequest, notFound, notRecovered } from './errors.js';
import { parseGoBool, readJson, sendEmpty, sendJson } from './http.js';
import { environmentRequest } from './requests.js';

/** Poseidon's ExecutionEnvironment (swagger components.schemas). */
export interface ExecutionEnvironment {
  id: number;
  image: string;
  prewarmingPoolSize: number;
  cpuLimit: number;
  memoryLimit: number;
  networkAccess: boolean;
  exposedPorts: number[];
}

function executionEnvironment({ id, spec }: EnvironmentSummary): ExecutionEnvironment {
  return {
    id,
    image: spec.image,
    prewarmingPoolSize: spec.prewarmingPoolSize,
    cpuLimit: spec.cpuLimit,
    memoryLimit: spec.memoryLimit,
    networkAccess: spec.networkAccess,
    // Poseidon sends null for none; the published schema says an array.
    exposedPorts: [...spec.exposedPorts],
  };
}

function environmentId({ params }: ApiRequest): number {
  const id = Number(params.executionEnvironmentId);
  if (!Number.isSafeInteger(id)) throw badRequest(`could not parse the execution environment id ${JSON.stringify(params.executionEnvironmentId)}`);
  return id;
}

function fetchParameter({ query }: ApiRequest): boolean {
  const text = query.get('fetch') ?? '';
  if (text === '') return false;
  const fetch = parseGoBool(text);
  if (fetch === undefined) throw badRequest(`could not parse fetch parameter: ${JSON.stringify(text)} is not a boolean`);
  return fetch;
}

/** Environments whose runners cannot run unprivileged executions (their check failed), with why. */
function unprivilegedProblems(environments: readonly EnvironmentSummary[]): string[] {
  return environments.flatMap((e) => (e.unprivileged.status === 'failed' ? [unprivilegedProblemText(e.id, e.unprivileged.reason)] : []));
}

/**
 * Poseidon's health: 204, or 503 PREWARMING_POOL_DEPLETING naming the environments whose pool is
 * emptier than the alert threshold (Poseidon's prewarming-pool alert) or cannot fill at all, the
 * latter with Nomad's reason (runners that cannot be placed or started); 503 also naming the
 * environments whose unprivileged executions cannot run, and why. While Nomad cannot be read at the
 * start, 503 NOMAD_UNREACHABLE with its error (Warden keeps trying, as Poseidon does).
 */
export const health: Handler = async ({ pools, poolAlertThreshold }, { res }) => {
  if (!pools.recovered && pools.recoveryError !== undefined) throw notRecovered(pools.recoveryError);
  const environments = visibleEnvironments(pools);
  const depleting = environments.filter((e) => e.failure !== null || (e.spec.prewarmingPoolSize > 0 && e.idleRunners / e.spec.prewarmingPoolSize < poolAlertThreshold));
  const reasons = [
    ...(depleting.length > 0
      ? [`the prewarming pool is depleting: environments ${depleting.map((e) => e.id).join(', ')}`, ...depleting.flatMap((e) => (e.failure === null ? [] : [`environment ${e.id}: ${e.failure}`]))]
      : []),
    ...unprivilegedProblems(environments),
  ];
  if (reasons.length > 0) throw new ApiError(503, reasons.join('; '), depleting.length > 0 ? 'PREWARMING_POOL_DEPLETING' : 'UNKNOWN');
  sendEmpty(res, 204);
};

export const version: Handler = async ({ version: release }, { res }) => {
  sendJson(res, 200, release);
};

export const statistics: Handler = async ({ pools }, { res }) => {
  const entries = visibleEnvironments(pools).map((e) => [String(e.id), { id: e.id, prewarmingPoolSize: e.spec.prewarmingPoolSize, idleRunners: e.idleRunners, usedRunners: e.usedRunners }]);
  sendJson(res, 200, Object.fromEntries(entries));
};

export const listEnvironments: Handler = async ({ pools }, request) => {
  if (fetchParameter(request)) await pools.fetchEnvironments();
  sendJson(request.res, 200, { executionEnvironments: visibleEnvironments(pools).map(executionEnvironment) });
};

export const getEnvironment: Handler = async ({ pools }, request) => {
  const id = environmentId(request);
  if (fetchParameter(request)) await pools.fetchEnvironments();
  const environment = visibleEnvironments(pools).find((e) => e.id === id);
  if (environment === undefined) throw notFound();
  sendJson(request.res, 200, executionEnvironment(environment));
};

export const putEnvironment: Handler = async ({ pools, environmentDefaults, bodyLimit }, request) => {
  const body = environmentRequest(await readJson(request.req, bodyLimit));
  const id = environmentId(request);
  const { created } = await pools.putEnvironment({ ...environmentDefaults, ...body, id });
  sendEmpty(request.res, created ? 201 : 204);
};

export const deleteEnvironment: Handler = async ({ pools }, request) => {
  const id = environmentId(request);
  if (!(await pools.deleteEnvironment(id))) throw notFound();
  sendEmpty(request.res, 204);
};
