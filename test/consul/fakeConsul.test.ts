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
    // Consul 1.8.7 does not check the state's name: an unknown one matches no check.
    ['/v1/health/state/bogus', 200, '[]'],
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
    // Filtered, not refused; Consul 1.8.7 sends no X-Consul-Results-Filtered-By-Acls (that came in 1.10).
    expect([anonymous.status, await anonymous.text(), anonymous.headers.get('x-consul-results-filtered-by-acls')]).toEqual([200, '[]', null]);
  });

  test("an output-only change reaches the catalogue after check_update_interval; the agent's view has it at once", async () => {
    const clock = new VirtualClock({ start: 0 });
    const deferred = await FakeConsul.start({ clock, checkUpdateIntervalMs: 60_000 });
    try {
      const { checkIds } = deferred.registerService({ allocId: ALLOC, task: 'web', service: 'web', checks: [{ name: 'a', status: 'passing' }] });
      const id = checkIds[0] as string;
      const index = deferred.index;
      deferred.setStatus(id, 'passing', 'new output');
      expect([deferred.index, deferred.checks()[0]?.Output]).toEqual([index, '']);
      const agent = (await (await fetch(`${deferred.address}/v1/agent/checks`)).json()) as Record<string, { Output: string }>;
      expect(agent[id]?.Output).toBe('new output');
      clock.advance(60_000);
      expect([deferred.index, deferred.checks()[0]?.Output]).toEqual([index + 1, 'new output']);
      // A status change carries the output with it at once.
      deferred.setStatus(id, 'critical', 'down');
      expect([deferred.index, deferred.checks()[0]?.Status, deferred.checks()[0]?.Output]).toEqual([index + 2, 'critical', 'down']);
    } finally {
      await deferred.close();
    }
  });

  test('registerService needs exactly one of task and group; setStatus an existing check', () => {
    expect(() => consul.registerService({ allocId: ALLOC, service: 'web', checks: [] })).toThrow('exactly one of task and group');
    expect(() => consul.setStatus('_nomad-check-missing', 'passing')).toThrow('no check');
  });
});
