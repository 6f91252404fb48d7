/**
 * FakeConsul held to Consul 1.8.7: the same cases run against FakeConsul in `npm test` and against
 * a real Consul dev agent in the live tier (support/consulTarget.ts). What Warden reads (the
 * catalogue's health states, blocking), what Nomad's client and its script checks write (service
 * registration, TTL updates through the agent), and the answers to what either refuses.
 */
import { request } from 'undici';
import type { CheckView } from '../../machines/allocationHealthTypes.js';
import { ConsulCheckFanOut } from '../../src/consul/checkFanOut.js';
import { ConsulClient } from '../../src/consul/client.js';
import { consulTarget, type ConsulTarget } from './support/consulTarget.js';

interface Answer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly text: string;
  /** X-Consul-Index, or 0. */
  readonly index: number;
}

async function call(target: ConsulTarget, method: 'GET' | 'PUT' | 'DELETE', path: string, options: { body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> {
  const body = options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
  const response = await request(`${target.address}${path}`, { method, ...(body === undefined ? {} : { body }), headers: options.headers ?? {}, headersTimeout: 0, bodyTimeout: 0, reset: true });
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) if (typeof value === 'string') headers[name] = value;
  const text = await response.body.text();
  return { status: response.statusCode, headers, text, index: Number(headers['x-consul-index'] ?? 0) };
}

interface HealthCheck {
  CheckID: string;
  Name: string;
  Status: string;
  Output: string;
  ServiceID: string;
  [field: string]: unknown;
}

const checksOf = (answer: Answer): HealthCheck[] => JSON.parse(answer.text) as HealthCheck[];

const ALLOC = '5d3c1e0a-7f4b-4c2d-9e8f-0a1b2c3d4e5f';
const TASK_SERVICE = `_nomad-task-${ALLOC}-web-api-http`;

/** A service as Nomad's client registers one for a task: its ID, its checks' IDs, TTL (script) checks. */
function nomadService(id: string, name: string, checks: readonly { id: string; name: string; status?: string }[]): Record<string, unknown> {
  return {
    ID: id,
    Name: name,
    Address: '127.0.0.1',
    Port: 24_000,
    Checks: checks.map((check) => ({ CheckID: check.id, Name: check.name, TTL: '1h', ...(check.status === undefined ? {} : { Status: check.status }) })),
  };
}

const CHECK_FIELDS = ['Node', 'CheckID', 'Name', 'Status', 'Notes', 'Output', 'ServiceID', 'ServiceName', 'ServiceTags', 'Type', 'Definition', 'CreateIndex', 'ModifyIndex'];

describe('Consul 1.8.7 health and agent API', () => {
  let target: ConsulTarget;
  beforeAll(async () => {
    target = await consulTarget();
  }, 60_000);
  afterAll(() => target.close());

  const health = (path = 'any', headers?: Record<string, string>): Promise<Answer> => call(target, 'GET', `/v1/health/state/${path}`, headers === undefined ? {} : { headers });
  const register = async (service: Record<string, unknown>): Promise<void> => {
    const answer = await call(target, 'PUT', '/v1/agent/service/register', { body: service });
    expect([answer.status, answer.text]).toEqual([200, '']);
  };
  const ttl = (verb: 'pass' | 'warn' | 'fail', id: string, note?: string): Promise<Answer> =>
    call(target, 'PUT', `/v1/agent/check/${verb}/${encodeURIComponent(id)}${note === undefined ? '' : `?note=${encodeURIComponent(note)}`}`);
  const checkIn = async (id: string): Promise<HealthCheck | undefined> => checksOf(await health()).find((check) => check.CheckID === id);

  test("the catalogue lists each check with Consul 1.8.7's fields and X-Consul-* headers", async () => {
    const before = await health();
    await register(nomadService(TASK_SERVICE, 'api', [{ id: '_nomad-check-shape-a', name: 'alive' }, { id: '_nomad-check-shape-b', name: 'ready', status: 'passing' }]));
    const after = await health();
    expect(after.status).toBe(200);
    expect(after.headers['content-type']).toBe('application/json');
    expect(after.index).toBeGreaterThan(before.index);
    expect([after.headers['x-consul-knownleader'], after.headers['x-consul-lastcontact'], after.headers['x-consul-effective-consistency']]).toEqual(['true', '0', 'leader']);
    const mine = checksOf(after).filter((check) => check.ServiceID === TASK_SERVICE).sort((a, b) => a.CheckID.localeCompare(b.CheckID));
    for (const check of mine) expect(Object.keys(check)).toEqual(CHECK_FIELDS);
    expect(mine.map(({ CheckID, Name, Status, Notes, Output, ServiceName, ServiceTags, Type, Definition }) => ({ CheckID, Name, Status, Notes, Output, ServiceName, ServiceTags, Type, Definition }))).toEqual([
      { CheckID: '_nomad-check-shape-a', Name: 'alive', Status: 'critical', Notes: '', Output: '', ServiceName: 'api', ServiceTags: [], Type: 'ttl', Definition: {} },
      { CheckID: '_nomad-check-shape-b', Name: 'ready', Status: 'passing', Notes: '', Output: '', ServiceName: 'api', ServiceTags: [], Type: 'ttl', Definition: {} },
    ]);
    expect(mine.every((check) => check.CreateIndex === check.ModifyIndex && (check.CreateIndex as number) <= after.index)).toBe(true);
  });

  test('health/state/<state> lists the checks in that state; a state Consul does not know matches none; none at all is a 400', async () => {
    await register(nomadService(TASK_SERVICE, 'api', [{ id: '_nomad-check-state-a', name: 'alive', status: 'warning' }]));
    expect(checksOf(await health('warning')).map((check) => check.CheckID)).toContain('_nomad-check-state-a');
    expect(checksOf(await health('passing')).map((check) => check.CheckID)).not.toContain('_nomad-check-state-a');
    expect((await health('critical')).status).toBe(200);
    const unknown = await health('bogus');
    expect([unknown.status, JSON.parse(unknown.text)]).toEqual([200, []]);
    const none = await health('');
    expect([none.status, none.text]).toEqual([400, 'Missing check state']);
  });

  test("a new status moves the index; the same status and note again do not; a new note alone reaches the agent's view, not yet the catalogue", async () => {
    await register(nomadService(TASK_SERVICE, 'api', [{ id: '_nomad-check-moves', name: 'alive' }]));
    const start = (await health()).index;
    expect((await ttl('pass', '_nomad-check-moves', 'up')).status).toBe(200);
    const passed = await health();
    expect(passed.index).toBeGreaterThan(start);
    expect(checksOf(passed).find((check) => check.CheckID === '_nomad-check-moves')).toMatchObject({ Status: 'passing', Output: 'up' });
    await ttl('pass', '_nomad-check-moves', 'up');
    expect((await health()).index).toBe(passed.index);
    await ttl('pass', '_nomad-check-moves', 'still up');
    const catalogue = await health();
    // check_update_interval (5 min) defers an output-only change; the agent already has it.
    expect([catalogue.index, checksOf(catalogue).find((check) => check.CheckID === '_nomad-check-moves')?.Output]).toEqual([passed.index, 'up']);
    const agent = JSON.parse((await call(target, 'GET', '/v1/agent/checks')).text) as Record<string, HealthCheck>;
    expect(agent['_nomad-check-moves']).toMatchObject({ Status: 'passing', Output: 'still up', CreateIndex: 0, ModifyIndex: 0 });
    await ttl('warn', '_nomad-check-moves');
    expect(await checkIn('_nomad-check-moves')).toMatchObject({ Status: 'warning', Output: '' });
    const updated = await call(target, 'PUT', '/v1/agent/check/update/_nomad-check-moves', { body: { Status: 'critical', Output: 'down' } });
    expect(updated.status).toBe(200);
    expect(await checkIn('_nomad-check-moves')).toMatchObject({ Status: 'critical', Output: 'down' });
  });

  test('a blocking query at an unchanged index answers once its wait is over, with the same index', async () => {
    const { index } = await health();
    const started = target.clock.now();
    const pending = health(`any?index=${index}&wait=1s`);
    await target.elapse(1_000 * (17 / 16));
    const answer = await pending;
    expect([answer.status, answer.index]).toEqual([200, index]);
    expect(target.clock.now() - started).toBeGreaterThanOrEqual(1_000);
  });

  test('a change answers a waiting query at once, with a higher index; so does one whose wait is zero or less (the default wait)', async () => {
    await register(nomadService(TASK_SERVICE, 'api', [{ id: '_nomad-check-wakes', name: 'alive' }]));
    for (const wait of ['30s', '-1s', '0s']) {
      const { index } = await health();
      const started = target.clock.now();
      const pending = health(`any?index=${index}&wait=${wait}`);
      await target.elapse(0);
      await ttl((await checkIn('_nomad-check-wakes'))?.Status === 'passing' ? 'fail' : 'pass', '_nomad-check-wakes');
      const answer = await pending;
      expect(answer.index).toBeGreaterThan(index);
      expect(target.clock.now() - started).toBeLessThan(10_000);
    }
  });

  test("an index ahead of Consul's waits the whole wait, then answers with Consul's own index", async () => {
    const { index } = await health();
    const pending = health(`any?index=${index + 1_000_000}&wait=1s`);
    await target.elapse(1_000 * (17 / 16));
    expect((await pending).index).toBe(index);
  });

  test.each([
    ['GET', '/v1/health/state/any?wait=30', 400, 'Invalid wait time', undefined],
    ['GET', '/v1/health/state/any?index=abc', 400, 'Invalid index', undefined],
    ['GET', '/v1/health/state/any?index=-1', 400, 'Invalid index', undefined],
    ['PUT', '/v1/health/state/any', 405, 'method PUT not allowed', 'OPTIONS,GET'],
    ['GET', '/v1/agent/check/pass/x', 405, 'method GET not allowed', 'OPTIONS,PUT'],
    ['DELETE', '/v1/agent/service/register', 405, 'method DELETE not allowed', 'OPTIONS,PUT'],
    ['PUT', '/v1/agent/check/pass/no-such-check', 500, 'CheckID "no-such-check" does not have associated TTL', undefined],
    ['GET', '/v1/no-such-endpoint', 404, '', undefined],
  ] as const)('%s %s → %i %s', async (method, path, status, text, allow) => {
    const answer = await call(target, method, path);
    expect([answer.status, answer.text]).toEqual([status, text]);
    if (allow !== undefined) expect(answer.headers.allow).toBe(allow);
  });

  test('registrations and updates Consul refuses', async () => {
    const refused = async (path: string, body: unknown): Promise<[number, string]> => {
      const answer = await call(target, 'PUT', path, { body });
      return [answer.status, answer.text];
    };
    expect(await refused('/v1/agent/service/register', { Name: '' })).toEqual([400, 'Missing service name']);
    expect(await refused('/v1/agent/service/register', { Name: 'x', Checks: [{ Name: 'c' }] })).toEqual([400, 'Invalid check: TTL must be > 0 for TTL checks']);
    expect((await refused('/v1/agent/service/register', 'not json'))[1]).toMatch(/^Request decode failed: /);
    await register(nomadService(TASK_SERVICE, 'api', [{ id: '_nomad-check-refused', name: 'alive' }]));
    expect(await refused('/v1/agent/check/update/_nomad-check-refused', { Status: 'bogus' })).toEqual([400, "Invalid check status: 'bogus'"]);
  });

  test('a service registered again keeps the checks it had and adds the new ones', async () => {
    const id = `_nomad-task-${ALLOC}-web-again-http`;
    await register(nomadService(id, 'again', [{ id: '_nomad-check-again-a', name: 'first' }]));
    await register(nomadService(id, 'again', [{ id: '_nomad-check-again-b', name: 'second' }]));
    expect(checksOf(await health()).filter((check) => check.ServiceID === id).map((check) => check.Name).sort()).toEqual(['first', 'second']);
  });

  test("deregistering removes the service's checks and moves the index; an unknown service is no error; a service's default check ID and name", async () => {
    await register({ ID: 'plain-service', Name: 'plain', Check: { TTL: '1h' } });
    expect(await checkIn('service:plain-service')).toMatchObject({ Name: "Service 'plain' check", Status: 'critical', ServiceID: 'plain-service' });
    const { index } = await health();
    expect((await call(target, 'PUT', '/v1/agent/service/deregister/plain-service')).status).toBe(200);
    const after = await health();
    expect(after.index).toBeGreaterThan(index);
    expect(checksOf(after).some((check) => check.ServiceID === 'plain-service')).toBe(false);
    expect((await call(target, 'PUT', '/v1/agent/service/deregister/no-such-service')).status).toBe(200);
  });

  test("Warden's client and fan-out: a task's and a group's Nomad-named checks reach their allocation, each change once", async () => {
    // An allocation of its own: a service registered again keeps the checks registered with it before.
    const OWN = '9e8d7c6b-5a49-4838-a7b6-c5d4e3f2a1b0';
    await register(nomadService(`_nomad-task-${OWN}-web-api-http`, 'api', [{ id: '_nomad-check-fan-a', name: 'alive' }]));
    await register(nomadService(`_nomad-task-${OWN}-group-app-front-http`, 'front', [{ id: '_nomad-check-fan-b', name: 'ready', status: 'passing' }]));
    const client = new ConsulClient({ address: target.address }, { clock: target.clock, gzip: target.kind === 'consul' });
    const views: CheckView[][] = [];
    const fanOut = new ConsulCheckFanOut((allocationId, checks) => {
      if (allocationId === OWN) views.push([...checks]);
    });
    let answers = 0;
    let answered: () => void = () => undefined;
    const subscription = client.watchHealthChecks({ waitMs: 30_000 }).subscribe((update) => {
      answers += 1;
      fanOut.update(update.checks);
      answered();
    });
    /** Until `done`: the fake's sockets let through, or the real agent's next answer awaited. */
    const until = async (done: () => boolean): Promise<void> => {
      while (!done()) await (target.kind === 'fake' ? target.elapse(0) : new Promise<void>((resolve) => (answered = resolve)));
    };
    const alive = (status: CheckView['status']): CheckView => ({ task: 'web', service: 'api', name: 'alive', status });
    const ready: CheckView = { task: '', service: 'front', name: 'ready', status: 'passing' };
    const sorted = (list: readonly CheckView[]): CheckView[] => [...list].sort((a, b) => a.name.localeCompare(b.name));
    try {
      await until(() => answers > 0);
      expect(sorted(fanOut.follow(OWN, { Name: 'app', Tasks: [{ Name: 'web', Driver: 'raw_exec' }] }))).toEqual([alive('critical'), ready]);
      await ttl('pass', '_nomad-check-fan-a', 'up');
      await until(() => views.length > 0);
      expect(views.map(sorted)).toEqual([[alive('passing'), ready]]);
      // The same status again is no change: nothing more reaches the allocation.
      await ttl('pass', '_nomad-check-fan-a', 'up');
      await ttl('warn', '_nomad-check-fan-a', 'slow');
      await until(() => views.length > 1);
      expect(views.map(sorted)).toEqual([[alive('passing'), ready], [alive('warning'), ready]]);
    } finally {
      subscription.unsubscribe();
      await client.close();
    }
  });
});

describe('Consul 1.8.7 with ACLs (default deny)', () => {
  const TOKEN = '6a1f0a8e-2b7c-4d3e-9f10-5c6d7e8f9a0b';
  let target: ConsulTarget;
  beforeAll(async () => {
    target = await consulTarget({ token: TOKEN });
  }, 60_000);
  afterAll(() => target.close());

  test('the anonymous token sees no checks and may not register; an unknown token is refused; the token works in X-Consul-Token, Bearer and ?token=', async () => {
    const withToken = { 'X-Consul-Token': TOKEN };
    const registered = await call(target, 'PUT', '/v1/agent/service/register', { body: nomadService(TASK_SERVICE, 'api', [{ id: '_nomad-check-acl', name: 'alive' }]), headers: withToken });
    expect(registered.status).toBe(200);
    const anonymous = await call(target, 'GET', '/v1/health/state/any');
    expect([anonymous.status, JSON.parse(anonymous.text), anonymous.headers['x-consul-results-filtered-by-acls']]).toEqual([200, [], undefined]);
    const write = await call(target, 'PUT', '/v1/agent/service/register', { body: { Name: 'anonymous' } });
    // Consul words it 'Permission denied' while its ACL system starts, then adds what is missing.
    expect([write.status, write.text]).toEqual([403, expect.stringMatching(/^Permission denied/)]);
    const wrong = await call(target, 'GET', '/v1/health/state/any', { headers: { 'X-Consul-Token': 'not-a-token' } });
    expect([wrong.status, wrong.text]).toEqual([403, 'ACL not found']);
    for (const [path, headers] of [['/v1/health/state/any', withToken], ['/v1/health/state/any', { Authorization: `Bearer ${TOKEN}` }], [`/v1/health/state/any?token=${TOKEN}`, {}]] as const) {
      const answer = await call(target, 'GET', path, { headers });
      expect(checksOf(answer).map((check) => check.CheckID)).toContain('_nomad-check-acl');
    }
  });
});
