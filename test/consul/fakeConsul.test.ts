/** FakeConsul's wire: Consul's headers, parameter errors, states, methods, ACL answers. */
import { VirtualClock } from '../../src/clock/index.js';
import { FakeConsul } from '../../src/testing/fakeConsul.js';

const ALLOC = '1b4e61df-b095-d64e-f241-23860da1375f';

describe('FakeConsul', () => {
  let consul: FakeConsul;
  beforeEach(async () => {
    consul = await FakeConsul.start({ clock: new VirtualClock({ start: 0 }), token: 'tkn' });
  });
  afterEach(() => consul.close());

  const get = (path: string, headers: Record<string, string> = { 'X-Consul-Token': 'tkn' }, method = 'GET') => fetch(`${consul.address}${path}`, { method, headers });

  test('health/state answers with the checks of that state and X-Consul-* headers', async () => {
    const { serviceId, checkIds } = consul.registerService({ allocId: ALLOC, task: 'web', service: 'web', checks: [{ name: 'a', status: 'passing' }, { name: 'b' }] });
    expect(serviceId).toBe(`_nomad-task-${ALLOC}-web-web-http`);
    expect(checkIds.every((id) => /^_nomad-check-[0-9a-f]{40}$/.test(id))).toBe(true);
    const response = await get('/v1/health/state/critical');
    expect(response.status).toBe(200);
    expect(response.headers.get('x-consul-index')).toBe(String(consul.index));
    expect(response.headers.get('x-consul-knownleader')).toBe('true');
    expect(((await response.json()) as { Name: string }[]).map((check) => check.Name)).toEqual(['b']);
  });

  test.each([
    ['/v1/health/state/any?wait=30', 400, 'Invalid wait time'],
    ['/v1/health/state/any?index=abc', 400, 'Invalid index'],
    ['/v1/health/state/bogus', 400, 'Invalid state: bogus'],
    ['/v1/kv/x', 404, ''],
  ])('%s → %i %s', async (path, status, text) => {
    const response = await get(path);
    expect(response.status).toBe(status);
    expect(await response.text()).toBe(text);
  });

  test('a method other than GET is refused; tokens by header, bearer or ?token=, a wrong one refused', async () => {
    expect((await get('/v1/health/state/any', { 'X-Consul-Token': 'tkn' }, 'PUT')).status).toBe(405);
    expect((await get('/v1/health/state/any', { Authorization: 'Bearer tkn' })).status).toBe(200);
    expect((await get('/v1/health/state/any?token=tkn', {})).status).toBe(200);
    const wrong = await get('/v1/health/state/any', { 'X-Consul-Token': 'nope' });
    expect([wrong.status, await wrong.text()]).toEqual([403, 'ACL not found']);
    const anonymous = await get('/v1/health/state/any', {});
    expect(anonymous.headers.get('x-consul-results-filtered-by-acls')).toBe('true');
  });

  test('registerService needs exactly one of task and group; setStatus an existing check', () => {
    expect(() => consul.registerService({ allocId: ALLOC, service: 'web', checks: [] })).toThrow('exactly one of task and group');
    expect(() => consul.setStatus('_nomad-check-missing', 'passing')).toThrow('no check');
  });
});
