/**
 * The HTTP API of Nomad 1.1.2 over the cluster state: each route is a method set, a path pattern
 * and a handler. Query routes answer through one blocking-query path; writes answer with
 * X-Nomad-Index only; failures are NomadApiErrors turned into Nomad's text answers.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseBlocking, waitForIndex, type BlockingContext } from './blocking.js';
import type { ClusterState, RegisterResult, Table } from './clusterState.js';
import { NomadApiError } from './errors.js';
import { plainExecAnswer } from './execQuery.js';
import type { FaultSwitches } from './faults.js';
import { decodeBody, goKind } from './goJson.js';
import { parseJobHcl } from './hcl.js';
import type { JsonObject } from './jobSpec.js';
import type { Deployment } from '../../nomad/types.js';
import { requireUuidDigits, uuidKey } from './uuidIndex.js';
import { readBody, sendJson, sendText } from './wire.js';
import { NODE_ROUTES } from './nodeRoutes.js';

export interface RouteContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly params: readonly string[];
  readonly cluster: ClusterState;
  readonly blocking: BlockingContext;
  readonly faults: FaultSwitches;
}

type Handler = (ctx: RouteContext) => Promise<void> | void;

export interface Route {
  readonly methods: readonly string[];
  readonly pattern: RegExp;
  readonly handler: Handler;
}

const GET = ['GET'];
const WRITE = ['PUT', 'POST'];

/** A query answer: the value and the index it reports, or a 404 text with the table's index. */
type QueryResult = { index: number; value: unknown } | { index: number; notFound: string };

/** Answers a query endpoint, blocking on ?index/&wait until `compute()` reports a newer index. */
async function query(ctx: RouteContext, compute: () => QueryResult): Promise<void> {
  const options = parseBlocking(ctx.url.searchParams);
  await waitForIndex(ctx.blocking, options, () => compute().index, (abort) => ctx.res.on('close', abort));
  if (ctx.res.destroyed) return;
  const result = compute();
  const meta = { index: result.index, query: true };
  if ('notFound' in result) sendText(ctx.req, ctx.res, 404, result.notFound, meta);
  else sendJson(ctx.req, ctx.res, result.value, meta);
}

function listOptions(ctx: RouteContext): { namespace: string; prefix: string } {
  return { namespace: ctx.url.searchParams.get('namespace') || 'default', prefix: ctx.url.searchParams.get('prefix') ?? '' };
}

/** A UUID table's list options: the prefix must parse as Nomad's UUID index reads it (500 `<lead>index error: …`). */
function uuidListOptions(ctx: RouteContext, lead: string): { namespace: string; prefix: string } {
  const options = listOptions(ctx);
  requireUuidDigits(options.prefix, false, lead);
  return options;
}

/** The leads of Nomad's lookup errors, by table. */
const LOOKUP = { alloc: 'alloc lookup failed: ', eval: 'eval lookup failed: ', deployment: 'deployment lookup failed: ', bare: '' } as const;

/**
 * The path's UUID as the state store looks it up: a whole ID (else the 500 `<lead>index error: …`),
 * compared as bytes, so upper case names the same object.
 */
function pathUuid(ctx: RouteContext, table: keyof typeof LOOKUP): string {
  const raw = pathParam(ctx);
  const key = uuidKey(raw, LOOKUP[table]);
  return ctx.cluster.hasObject(raw) ? raw : key;
}

/** A list endpoint: the table's index and whatever `read` lists. */
function listRoute(pattern: RegExp, table: Table, read: (ctx: RouteContext) => unknown): Route {
  return { methods: GET, pattern, handler: (ctx) => query(ctx, () => ({ index: ctx.cluster.tableIndex(table), value: read(ctx) })) };
}

/**
 * A single-object endpoint: the object's ModifyIndex, or Nomad's 404 text with the table's index.
 * `uuid` names a UUID table's lookup (`alloc`, `eval`, `deployment`): the ID is parsed as its index does.
 */
function objectRoute(pattern: RegExp, table: Table, notFound: string, read: (ctx: RouteContext, id: string) => { ModifyIndex?: unknown } | undefined, uuid?: keyof typeof LOOKUP): Route {
  return {
    methods: GET,
    pattern,
    handler: (ctx) => query(ctx, () => {
      const object = read(ctx, uuid === undefined ? pathParam(ctx) : pathUuid(ctx, uuid));
      return object === undefined ? { index: ctx.cluster.tableIndex(table), notFound } : { index: Number(object.ModifyIndex), value: object };
    }),
  };
}

/** The request body as a JSON object; Go's decoding errors otherwise, naming the request type. */
async function writeBody(ctx: RouteContext, goType: string): Promise<JsonObject> {
  const body = decodeBody(await readBody(ctx.req), hasNoBody(ctx.req));
  // Go decodes null into a struct as nothing at all: the handler's own checks answer then.
  if (body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw new NomadApiError(400, `json: cannot unmarshal ${goKind(body)} into Go value of type ${goType}`);
  return body as JsonObject;
}

/** Go's server gives a request without a body (Content-Length 0, or neither length nor chunking) http.NoBody. */
function hasNoBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return length === '0' || (length === undefined && req.headers['transfer-encoding'] === undefined);
}

/** A path segment, unescaped; a broken escape is the 400 Go's URL parser answers. */
function pathParam(ctx: RouteContext): string {
  const raw = ctx.params[0]!;
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new NomadApiError(400, `invalid URL escape ${JSON.stringify(/%(?![0-9a-fA-F]{2}).{0,2}/.exec(raw)?.[0] ?? raw)}`);
  }
}

/** Nomad's JobRegisterResponse (QueryMeta embedded), the answer to a registration and to a scale. */
function sendRegistered(ctx: RouteContext, result: RegisterResult): void {
  sendJson(ctx.req, ctx.res, {
    EvalCreateIndex: result.index, EvalID: result.evaluation.ID, Index: result.index, JobModifyIndex: result.job.JobModifyIndex,
    KnownLeader: false, LastContact: 0, Warnings: '',
  }, { index: result.index });
}

async function register(ctx: RouteContext, pathId?: string): Promise<void> {
  const body = await writeBody(ctx, 'api.JobRegisterRequest');
  const job = body.Job as JsonObject | null | undefined;
  if (job === undefined || job === null) throw new NomadApiError(400, 'Job must be specified');
  if (typeof job === 'object' && (job.ID === undefined || job.ID === null)) throw new NomadApiError(400, "Job ID hasn't been provided");
  if (pathId !== undefined && typeof job === 'object' && job.ID !== pathId) throw new NomadApiError(400, 'Job ID does not match name');
  // The job's own Namespace, "default" when it has none, whatever ?namespace= and the request's say
  // (Nomad 1.1.2, measured: a job with none sent with ?namespace=ops and Namespace "batch" is in default).
  const options = { enforceIndex: body.EnforceIndex === true, jobModifyIndex: Number(body.JobModifyIndex ?? 0) };
  const window = options.enforceIndex ? ctx.faults.takeRegisterRace(String(job.ID)) : undefined;
  if (window !== undefined) {
    // Checked now, applied after the window: what came in between (a purge) is applied first.
    ctx.cluster.checkEnforceIndex(job, options);
    await new Promise<void>((resolve) => ctx.blocking.clock.setTimeout(resolve, window));
    sendRegistered(ctx, ctx.cluster.registerJob(job, { ...options, enforceIndex: false }));
    return;
  }
  sendRegistered(ctx, ctx.cluster.registerJob(job, options));
}

/** PUT /v1/job/:id/scale (command/agent/job_endpoint.go jobScaleAction), answered as a registration. */
async function scale(ctx: RouteContext): Promise<void> {
  const body = await writeBody(ctx, 'api.ScalingRequest');
  const target = (body.Target ?? {}) as Record<string, unknown>;
  const id = jobId(ctx);
  if (typeof target.Job === 'string' && target.Job !== '' && target.Job !== id) throw new NomadApiError(400, 'job ID in payload did not match URL');
  const namespace = namespaceOf(ctx);
  if (typeof target.Namespace === 'string' && target.Namespace !== '' && target.Namespace !== namespace) {
    throw new NomadApiError(400, 'namespace in payload did not match header');
  }
  if (typeof body.Count !== 'number') throw new NomadApiError(400, 'scaling action without a count is not supported by this fake');
  const result = ctx.cluster.scaleJob(id, typeof target.Group === 'string' ? target.Group : '', body.Count, { namespace });
  sendRegistered(ctx, result);
}

/** A deployment write body: DeploymentID must repeat the path's ID, as Nomad checks. */
async function deploymentBody(ctx: RouteContext, goType: string): Promise<JsonObject> {
  const body = await writeBody(ctx, goType);
  if (typeof body.DeploymentID !== 'string' || body.DeploymentID === '') throw new NomadApiError(400, 'DeploymentID must be specified');
  if (body.DeploymentID !== pathParam(ctx)) throw new NomadApiError(400, 'Deployment ID does not match');
  pathUuid(ctx, 'deployment');
  return body;
}

/** A deployment write answered with Nomad's DeploymentUpdateResponse. */
function deploymentWrite(pattern: RegExp, apply: (ctx: RouteContext) => Deployment | Promise<Deployment>): Route {
  return {
    methods: WRITE,
    pattern,
    handler: async (ctx) => {
      const index = Number((await apply(ctx)).ModifyIndex);
      sendJson(ctx.req, ctx.res, { DeploymentModifyIndex: index, EvalCreateIndex: 0, EvalID: '', Index: index, RevertedJobVersion: null }, { index });
    },
  };
}

function namespaceOf(ctx: RouteContext): string {
  return ctx.url.searchParams.get('namespace') || 'default';
}

const jobId = pathParam;

const ROUTES: readonly Route[] = [
  listRoute(/^\/v1\/jobs$/, 'jobs', (ctx) => ctx.cluster.listJobs(listOptions(ctx))),
  { methods: WRITE, pattern: /^\/v1\/jobs$/, handler: (ctx) => register(ctx) },
  {
    methods: WRITE,
    pattern: /^\/v1\/jobs\/parse$/,
    handler: async (ctx) => {
      const body = await writeBody(ctx, 'api.JobsParseRequest');
      if (typeof body.JobHCL !== 'string' || body.JobHCL.trim() === '') throw new NomadApiError(400, 'Job spec is empty');
      sendJson(ctx.req, ctx.res, parseJobHcl(body.JobHCL));
    },
  },
  {
    methods: GET,
    pattern: /^\/v1\/job\/([^/]+)\/versions$/,
    handler: (ctx) => query(ctx, () => {
      const versions = ctx.cluster.jobVersions(jobId(ctx), namespaceOf(ctx));
      const index = ctx.cluster.tableIndex('job_version');
      return versions.length === 0
        ? { index, notFound: 'job versions not found' }
        : { index, value: { Diffs: null, Index: index, KnownLeader: true, LastContact: 0, Versions: versions } };
    }),
  },
  objectRoute(/^\/v1\/job\/([^/]+)\/summary$/, 'job_summary', 'job not found', (ctx, id) => ctx.cluster.jobSummary(id, namespaceOf(ctx))),
  listRoute(/^\/v1\/job\/([^/]+)\/allocations$/, 'allocs', (ctx) => ctx.cluster.listAllocations({ namespace: namespaceOf(ctx), jobId: jobId(ctx) })),
  listRoute(/^\/v1\/job\/([^/]+)\/evaluations$/, 'evals', (ctx) => ctx.cluster.listEvaluations({ namespace: namespaceOf(ctx), jobId: jobId(ctx) })),
  listRoute(/^\/v1\/job\/([^/]+)\/deployments$/, 'deployment', (ctx) => ctx.cluster.listDeployments({ namespace: namespaceOf(ctx), jobId: jobId(ctx) })),
  listRoute(/^\/v1\/job\/([^/]+)\/deployment$/, 'deployment', (ctx) => ctx.cluster.listDeployments({ namespace: namespaceOf(ctx), jobId: jobId(ctx) })[0] ?? null),
  objectRoute(/^\/v1\/job\/([^/]+)$/, 'jobs', 'job not found', (ctx, id) => {
    const version = ctx.url.searchParams.get('version');
    return ctx.cluster.job(id, { namespace: namespaceOf(ctx), ...(version === null ? {} : { version: Number(version) }) });
  }),
  { methods: WRITE, pattern: /^\/v1\/job\/([^/]+)$/, handler: (ctx) => register(ctx, jobId(ctx)) },
  { methods: WRITE, pattern: /^\/v1\/job\/([^/]+)\/scale$/, handler: (ctx) => scale(ctx) },
  {
    methods: ['DELETE'],
    pattern: /^\/v1\/job\/([^/]+)$/,
    handler: (ctx) => {
      const purge = /^(1|t|true)$/i.test(ctx.url.searchParams.get('purge') ?? '');
      const { evaluation, index } = ctx.cluster.deregisterJob(jobId(ctx), { namespace: namespaceOf(ctx), purge });
      sendJson(ctx.req, ctx.res, {
        EvalCreateIndex: index, EvalID: evaluation.ID, Index: index, JobModifyIndex: index, KnownLeader: false, LastContact: 0,
        VolumeEvalID: '', VolumeEvalIndex: 0,
      }, { index });
    },
  },
  listRoute(/^\/v1\/allocations$/, 'allocs', (ctx) => ctx.cluster.listAllocations(uuidListOptions(ctx, 'alloc lookup failed: '))),
  {
    methods: WRITE,
    pattern: /^\/v1\/allocation\/([^/]+)\/stop$/,
    handler: (ctx) => {
      const id = pathUuid(ctx, 'alloc');
      if (ctx.cluster.allocation(id) === undefined) throw new NomadApiError(404, 'allocation not found');
      const { evaluation, index } = ctx.cluster.stopAllocation(id);
      sendJson(ctx.req, ctx.res, { EvalID: evaluation.ID, Index: index }, { index });
    },
  },
  objectRoute(/^\/v1\/allocation\/([^/]+)$/, 'allocs', 'alloc not found', (ctx, id) => ctx.cluster.allocation(id), 'alloc'),
  listRoute(/^\/v1\/evaluations$/, 'evals', (ctx) => ctx.cluster.listEvaluations(uuidListOptions(ctx, 'eval lookup failed: '))),
  listRoute(/^\/v1\/evaluation\/([^/]+)\/allocations$/, 'allocs', (ctx) => {
    const id = pathUuid(ctx, 'bare');
    return ctx.cluster.listAllocations({ namespace: '*' }).filter((a) => a.EvalID === id);
  }),
  objectRoute(/^\/v1\/evaluation\/([^/]+)$/, 'evals', 'eval not found', (ctx, id) => ctx.cluster.evaluation(id), 'eval'),
  listRoute(/^\/v1\/deployments$/, 'deployment', (ctx) => ctx.cluster.listDeployments(uuidListOptions(ctx, ''))),
  listRoute(/^\/v1\/deployment\/allocations\/([^/]+)$/, 'allocs', (ctx) => {
    const id = pathUuid(ctx, 'bare');
    return ctx.cluster.listAllocations({ namespace: '*' }).filter((a) => ctx.cluster.allocation(String(a.ID))?.DeploymentID === id);
  }),
  {
    methods: WRITE,
    pattern: /^\/v1\/deployment\/promote\/([^/]+)$/,
    handler: async (ctx) => {
      const body = await deploymentBody(ctx, 'structs.DeploymentPromoteRequest');
      const groups = body.All === true ? undefined : ((body.Groups as string[] | null) ?? []);
      const { evaluation, index } = ctx.cluster.promoteDeployment(pathParam(ctx), groups);
      sendJson(ctx.req, ctx.res, { DeploymentModifyIndex: index, EvalCreateIndex: index, EvalID: evaluation.ID, Index: index, RevertedJobVersion: null }, { index });
    },
  },
  deploymentWrite(/^\/v1\/deployment\/fail\/([^/]+)$/, (ctx) => ctx.cluster.setDeploymentStatus(pathUuid(ctx, 'deployment'), 'failed')),
  deploymentWrite(/^\/v1\/deployment\/pause\/([^/]+)$/, async (ctx) => {
    const body = await deploymentBody(ctx, 'structs.DeploymentPauseRequest');
    return body.Pause === true
      ? ctx.cluster.setDeploymentStatus(pathParam(ctx), 'paused')
      : ctx.cluster.setDeploymentStatus(pathParam(ctx), 'running');
  }),
  deploymentWrite(/^\/v1\/deployment\/allocation-health\/([^/]+)$/, async (ctx) => {
    const body = await deploymentBody(ctx, 'structs.DeploymentAllocHealthRequest');
    const ids = (key: string): string[] => ((body[key] as unknown[] | null) ?? []).map(String);
    return ctx.cluster.setDeploymentAllocHealth(pathParam(ctx), ids('HealthyAllocationIDs'), ids('UnhealthyAllocationIDs'));
  }),
  objectRoute(/^\/v1\/deployment\/([^/]+)$/, 'deployment', 'deployment not found', (ctx, id) => ctx.cluster.deployment(id), 'deployment'),
  { methods: GET, pattern: /^\/v1\/client\/allocation\/([^/]+)\/exec$/, handler: (ctx) => {
    const answer = plainExecAnswer(ctx.url);
    throw new NomadApiError(answer.status, answer.text);
  } },
  { methods: GET, pattern: /^\/v1\/status\/leader$/, handler: (ctx) => sendJson(ctx.req, ctx.res, '127.0.0.1:4647') },
  { methods: GET, pattern: /^\/v1\/agent\/self$/, handler: (ctx) => sendJson(ctx.req, ctx.res, agentSelf(ctx.cluster)) },
  ...NODE_ROUTES,
];

/** Enough of /v1/agent/self for a client: version, region, datacenter, the raft index. */
function agentSelf(cluster: ClusterState): JsonObject {
  const { version } = cluster.features;
  return {
    config: { Datacenter: 'dc1', Region: 'global', NodeName: cluster.nodeName, Version: { Revision: 'fake', Version: version, VersionMetadata: '', VersionPrerelease: '' }, ACL: { Enabled: false } },
    member: { Addr: '127.0.0.1', Name: `${cluster.nodeName}.global`, Port: 4648, Status: 'alive', Tags: { build: version, dc: 'dc1', region: 'global', role: 'nomad' } },
    stats: {
      nomad: { leader: 'true', server: 'true', known_regions: '1', bootstrap: 'true' },
      raft: { last_log_index: String(cluster.index), applied_index: String(cluster.index), commit_index: String(cluster.index), state: 'Leader' },
    },
  };
}

/** Finds the route for a request: the handler with its path parameters, or the Nomad answer for no route. */
export function matchRoute(method: string, path: string): { handler: Handler; params: string[] } | { status: number; text: string } {
  let pathMatched = false;
  for (const route of ROUTES) {
    const match = route.pattern.exec(path);
    if (match === null) continue;
    pathMatched = true;
    if (route.methods.includes(method)) return { handler: route.handler, params: match.slice(1) };
  }
  return pathMatched ? { status: 405, text: 'Invalid method' } : { status: 404, text: '' };
}
