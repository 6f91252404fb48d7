/**
 * Every answer and WebSocket message of `warden serve --dev`, over a session that reaches every
 * route with its successes and its failures, validates against Poseidon's published schemas
 * (test/fixtures/poseidon: api/swagger.yaml, api/websocket.schema.json), with ajv.
 *
 * The published swagger contradicts Poseidon itself in two places, and Warden follows Poseidon:
 * - FileHeader says `additionalProperties: false` with four properties, while Poseidon's listing
 *   (pkg/dto FileHeader, checked by its e2e suite) also sends permissions, owner, group and
 *   linkTarget;
 * - InternalServerError is `allOf: [ClientError, {errorCode}]` where ClientError forbids any
 *   property but `message`, so no body with an errorCode (every 500 Poseidon sends) can validate.
 * Those two are amended below, and a test shows that the published text indeed rejects Poseidon's
 * own shapes. Nothing else is.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { parse } from 'yaml';
import { startServe, type ServeHarness } from './support/serveHarness.js';

const FIXTURES = join(__dirname, '..', 'fixtures', 'poseidon');

type Json = Record<string, unknown>;

interface ResponseSpec {
  /** The JSON schema of its body, if it has one. */
  schema?: unknown;
  /** Where in the (amended) document the schema is, for the validator's $ref. */
  pointer?: string;
}

const swagger = parse(readFileSync(join(FIXTURES, 'swagger.yaml'), 'utf8')) as Json;
const websocketSchema = JSON.parse(readFileSync(join(FIXTURES, 'websocket.schema.json'), 'utf8')) as Json;

/** The two amendments (see the header), applied to a copy. */
function amended(document: Json): Json {
  const copy = structuredClone(document) as { components: { schemas: Record<string, Json>; responses: Record<string, Json> } } & Json;
  const fileHeader = copy.components.schemas.FileHeader as { properties: Json };
  Object.assign(fileHeader.properties, { permissions: { type: 'string' }, owner: { type: 'string' }, group: { type: 'string' }, linkTarget: { type: 'string' } });
  const internal = copy.components.responses.InternalServerError as { content: Record<string, { schema: Json }> };
  internal.content['application/json']!.schema = {
    type: 'object',
    properties: { message: { type: 'string' }, errorCode: { type: 'string', enum: ['NOMAD_UNREACHABLE', 'NOMAD_OVERLOAD', 'NOMAD_INTERNAL_SERVER_ERROR', 'PREWARMING_POOL_DEPLETING', 'UNKNOWN'] } },
    required: ['message'],
    additionalProperties: false,
  };
  return copy;
}

function validator(document: Json): { ajv: Ajv; id: string } {
  // OpenAPI 3.0 schema objects are JSON Schema with extra keywords (example, format: pct-encoded): not strict.
  const ajv = new Ajv({ strict: false, validateSchema: false, allErrors: true, logger: false });
  const id = 'https://poseidon.invalid/swagger.json';
  ajv.addSchema({ ...document, $id: id });
  return { ajv, id };
}

const escapePointer = (segment: string): string => segment.replaceAll('~', '~0').replaceAll('/', '~1');

/** The swagger path template a request path is (`/runners/1-abc/files` → `/runners/{runnerId}/files`). */
function template(document: Json, path: string): string | undefined {
  const relative = path.replace(/^\/api\/v1/, '');
  return Object.keys(document.paths as Json).find((candidate) => new RegExp(`^${candidate.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(relative));
}

/** The response a status of an operation is documented with (following a $ref to components.responses). */
function responseSpec(document: Json, pathTemplate: string, method: string, status: number): ResponseSpec | undefined {
  const operation = ((document.paths as Json)[pathTemplate] as Json)[method.toLowerCase()] as Json | undefined;
  let pointer = `#/paths/${escapePointer(pathTemplate)}/${method.toLowerCase()}/responses/${status}`;
  let response = (operation?.responses as Json | undefined)?.[String(status)] as Json | undefined;
  if (response === undefined) return undefined;
  if (typeof response.$ref === 'string') {
    pointer = response.$ref;
    const name = response.$ref.split('/').at(-1)!;
    response = ((document.components as Json).responses as Json)[name] as Json;
  }
  const content = (response.content as Record<string, { schema?: unknown }> | undefined)?.['application/json'];
  return content?.schema === undefined ? {} : { schema: content.schema, pointer: `${pointer}/content/application~1json/schema` };
}

describe("warden serve's answers against Poseidon's published schemas", () => {
  let h: ServeHarness;
  const document = amended(swagger);
  const { ajv, id } = validator(document);
  const messageValidator = new Ajv({ strict: false, allErrors: true }).compile({ ...websocketSchema, $schema: undefined });
  const compiled = new Map<string, ValidateFunction>();
  const validate = (pointer: string): ValidateFunction => {
    const known = compiled.get(pointer);
    if (known !== undefined) return known;
    const made = ajv.compile({ $ref: `${id}${pointer}` });
    compiled.set(pointer, made);
    return made;
  };

  beforeAll(async () => {
    h = await startServe({ poolAlertThreshold: 0.5 });
    await session(h);
  });
  afterAll(async () => {
    expect(await h.stop()).toBe(0);
  });

  it('the published text rejects shapes Poseidon itself sends (the reason for the two amendments)', () => {
    const published = validator(swagger);
    const check = (pointer: string, body: unknown): boolean => published.ajv.compile({ $ref: `${published.id}${pointer}` })(body) as boolean;
    expect(check('#/components/responses/InternalServerError/content/application~1json/schema', { message: 'x', errorCode: 'UNKNOWN' })).toBe(false);
    expect(check('#/components/schemas/FileHeader', { name: 'a', entryType: '-', size: 1, modificationTime: 1, permissions: 'rwxr--r--', owner: 'root', group: 'root' })).toBe(false);
    // The amended schemas still refuse what neither says.
    expect(validate('#/components/responses/InternalServerError/content/application~1json/schema')({ message: 'x', errorCode: 'OTHER' })).toBe(false);
    expect(validate('#/components/schemas/FileHeader')({ name: 'a', size: 1, modificationTime: 1, extra: true })).toBe(false);
  });

  it('the session reached every route of the API, and each status it answered is documented for its route', () => {
    const reached = new Set(h.seen.filter((s) => s.method !== 'WS').map((s) => `${s.method} ${template(document, s.route)}`));
    const documented = Object.entries(document.paths as Record<string, Json>).flatMap(([path, operations]) =>
      Object.keys(operations).filter((key) => ['get', 'put', 'post', 'patch', 'delete'].includes(key)).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect([...reached].sort()).toEqual(expect.arrayContaining(documented.sort()));
    const undocumented = h.seen
      .filter((s) => s.method !== 'WS')
      .filter((s) => responseSpec(document, template(document, s.route)!, s.method, s.status) === undefined)
      .map((s) => `${s.method} ${s.route} ${s.status}`);
    expect(undocumented).toEqual([]);
  });

  it('every JSON answer validates against the schema of its route and status; answers without a schema have no JSON body', () => {
    let validated = 0;
    for (const answer of h.seen.filter((s) => s.method !== 'WS')) {
      const spec = responseSpec(document, template(document, answer.route)!, answer.method, answer.status);
      if (spec?.pointer === undefined) {
        // Documented without content: empty, or Poseidon's {"message"} (its 404 of an unknown environment's runner, its version string).
        if (answer.body !== undefined && answer.route !== '/api/v1/version') expect(Object.keys(answer.body as object)).toEqual(['message']);
        continue;
      }
      const check = validate(spec.pointer);
      const ok = check(answer.body);
      if (!ok) throw new Error(`${answer.method} ${answer.route} ${answer.status}: ${JSON.stringify(answer.body)}\n${JSON.stringify(check.errors, null, 2)}`);
      validated += 1;
    }
    expect(validated).toBeGreaterThan(25);
  });

  it('every WebSocket message validates against websocket.schema.json, and every kind of message was seen', () => {
    const messages = h.seen.filter((s) => s.method === 'WS').map((s) => s.body as { type: string });
    for (const message of messages) {
      if (!messageValidator(message)) throw new Error(`${JSON.stringify(message)}: ${JSON.stringify(messageValidator.errors)}`);
    }
    expect(new Set(messages.map((m) => m.type))).toEqual(new Set(['start', 'stdout', 'stderr', 'exit', 'timeout', 'error']));
  });
});

/** A client's session over every route, successes and failures. */
async function session(h: ServeHarness): Promise<void> {
  const env = '/api/v1/execution-environments';
  const environment = { prewarmingPoolSize: 2, cpuLimit: 100, memoryLimit: 256, image: 'local', networkAccess: true, exposedPorts: [8080] };
  await h.call('GET', '/api/v1/health');
  await h.call('GET', '/api/v1/version');
  await h.settled(h.call('PUT', `${env}/1`, { body: environment }));
  await h.settled(h.call('PUT', `${env}/1`, { body: { ...environment, cpuLimit: 120 } }));
  await h.call('PUT', `${env}/1`, { raw: '{' });
  await h.call('PUT', `${env}/99999999999999999999`, { body: environment });
  // A pool not full yet: the health alert (threshold 0.5).
  await h.call('GET', '/api/v1/health');
  await h.environment(1, 2, { cpuLimit: 120, networkAccess: true, exposedPorts: [8080] });
  await h.call('GET', '/api/v1/health');
  await h.call('GET', env);
  await h.settled(h.call('GET', `${env}?fetch=true`));
  await h.call('GET', `${env}/1`);
  await h.call('GET', `${env}/2`);
  await h.call('GET', `${env}/1?fetch=yes`);
  await h.call('GET', '/api/v1/statistics/execution-environments');
  await h.call('POST', '/api/v1/runners', { raw: '' });
  await h.call('POST', '/api/v1/runners', { body: { executionEnvironmentId: 2 } });
  const runner = await h.runner(1, 5);
  const other = await h.runner(1, 0);
  await h.call('POST', '/api/v1/runners', { body: { executionEnvironmentId: 1 } });
  await h.copy(runner, { 'a/b.txt': 'content', 'c.txt': '' });
  await h.call('PATCH', `/api/v1/runners/${runner}/files`, { body: { copy: 3 } });
  await h.copy(runner, { '/proc/1/environ': 'x' });
  await h.call('GET', `/api/v1/runners/${runner}/files`);
  await h.call('GET', `/api/v1/runners/${runner}/files?path=/proc/self/cwd&recursive=false`);
  await h.call('GET', `/api/v1/runners/${runner}/files?path=missing`);
  await h.call('GET', `/api/v1/runners/${runner}/files/raw?path=a/b.txt`);
  await h.call('GET', `/api/v1/runners/${runner}/files/raw?path=missing`);
  await h.call('POST', `/api/v1/runners/${runner}/execute`, { body: { command: "it's" } });
  await h.run(runner, { command: 'echo out; echo err >&2; exit 3', environment: { A: 'b' }, timeLimit: 10, privilegedExecution: true });
  const slow = await h.connect(await h.execute(runner, { command: 'sleep 30', timeLimit: 1 }));
  await slow.next('start');
  await h.drive(1_100);
  await slow.closed;
  const destroyed = await h.connect(await h.execute(other, { command: 'sleep 30' }));
  await destroyed.next('start');
  await h.settled(h.call('DELETE', `/api/v1/runners/${other}`));
  await destroyed.closed;
  const url = new URL((await h.execute(runner, { command: 'true' })).replace(/^ws/, 'http'));
  await h.call('GET', `${url.pathname}?executionID=unknown`);
  for (const route of ['', '/files', '/files/raw?path=x', '/execute', '/websocket?executionID=x']) {
    const method = route === '' ? 'DELETE' : route === '/execute' ? 'POST' : 'GET';
    await h.call(method, `/api/v1/runners/${other}${route}`, method === 'POST' ? { body: { command: 'true' } } : {});
  }
  await h.call('PATCH', `/api/v1/runners/${other}/files`, { body: {} });
  await h.settled(h.call('DELETE', `/api/v1/runners/${runner}`));
  await h.settled(h.call('DELETE', `${env}/1`));
  await h.settled(h.call('DELETE', `${env}/1`));
  await h.call('DELETE', `${env}/99999999999999999999`);
}
