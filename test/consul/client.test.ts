/** The one blocking query against FakeConsul on a VirtualClock: index + wait, back-off, resets, errors. */
import { VirtualClock, settle } from '../../src/clock/index.js';
import { ConsulClient, type ConsulChecksUpdate } from '../../src/consul/client.js';
import { ConsulHttpError, ConsulUnavailableError } from '../../src/consul/errors.js';
import { FakeConsul } from '../../src/testing/fakeConsul.js';

const ALLOC = '1b4e61df-b095-d64e-f241-23860da1375f';
const flush = (): Promise<void> => settle(20);

describe('ConsulClient against FakeConsul', () => {
  let clock: VirtualClock;
  let consul: FakeConsul;
  let client: ConsulClient;
  beforeEach(async () => {
    clock = new VirtualClock({ start: Date.UTC(2026, 10, 29, 20) });
    consul = await FakeConsul.start({ clock, token: 'secret-consul-token' });
    client = new ConsulClient({ address: consul.address, token: 'secret-consul-token' }, { clock, gzip: false });
  });
  afterEach(async () => {
    await client.close();
    await consul.close();
  });

  test('a plain query answers at once with X-Consul-Index; a blocking one waits for a change', async () => {
    const { checkIds } = consul.registerService({ allocId: ALLOC, task: 'web', service: 'web', checks: [{ name: 'alive' }] });
    const first = await client.healthChecks();
    expect(first.meta.lastIndex).toBe(consul.index);
    expect(first.body).toEqual([expect.objectContaining({ CheckID: checkIds[0], Name: 'alive', Status: 'critical', ServiceName: 'web', ServiceID: `_nomad-task-${ALLOC}-web-web-http` })]);
    let answered = false;
    const blocked = client.healthChecks({ index: first.meta.lastIndex, waitMs: 60_000 }).then((response) => {
      answered = true;
      return response;
    });
    await flush();
    expect(answered).toBe(false);
    consul.setStatus(checkIds[0]!, 'passing');
    const second = await blocked;
    expect(second.meta.lastIndex).toBeGreaterThan(first.meta.lastIndex);
    expect(second.body[0]?.Status).toBe('passing');
  });

  test('the watch: one query outstanding, one emission per change, the same data again after the wait runs out', async () => {
    const updates: ConsulChecksUpdate[] = [];
    const subscription = client.watchHealthChecks({ waitMs: 10_000 }).subscribe((update) => updates.push(update));
    await flush();
    expect(updates).toHaveLength(1);
    const { checkIds } = consul.registerService({ allocId: ALLOC, group: 'app', service: 'front', checks: [{ name: 'up' }] });
    await flush();
    consul.setStatus(checkIds[0]!, 'warning');
    await flush();
    expect(updates.map((update) => update.checks.map((check) => check.Status))).toEqual([[], ['critical'], ['warning']]);
    // Each carries when its answer arrived, on the client's clock.
    expect(updates.every((update) => update.receivedAt === clock.now())).toBe(true);
    const requests = consul.stats.requests;
    clock.advance(10_000 * (17 / 16) + 1);
    await flush();
    // The wait ran out: Consul answered with the same index, nothing new is emitted, and it asks again.
    expect(updates).toHaveLength(3);
    expect(consul.stats.requests).toBe(requests + 1);
    expect(consul.stats.maxInFlight).toBe(1);
    subscription.unsubscribe();
  });

  test('an index going backwards (a restored Consul) starts over from the restored data', async () => {
    const updates: ConsulChecksUpdate[] = [];
    consul.registerService({ allocId: ALLOC, task: 'web', service: 'web', checks: [{ name: 'a' }] });
    consul.registerService({ allocId: ALLOC, task: 'web', service: 'api', checks: [{ name: 'b' }] });
    const subscription = client.watchHealthChecks({ waitMs: 10_000 }).subscribe((update) => updates.push(update));
    await flush();
    expect(updates.at(-1)?.index).toBe(3);
    consul.restore(2);
    // Consul blocks a query whose index is ahead of its own until the wait ends.
    clock.advance(10_000 * (17 / 16) + 1);
    await flush();
    expect(updates.map((update) => update.index)).toEqual([3, 2]);
    consul.registerService({ allocId: ALLOC, task: 'web', service: 'db', checks: [{ name: 'c' }] });
    await flush();
    expect(updates.map((update) => update.index)).toEqual([3, 2, 3]);
    expect(updates.at(-1)?.checks).toHaveLength(3);
    subscription.unsubscribe();
  });

  test('a refused token is a ConsulHttpError (403, Consul\'s text) that does not carry the token', async () => {
    const wrong = new ConsulClient({ address: consul.address, token: 'not-the-token-xyz' }, { clock, gzip: false });
    try {
      const error = await wrong.healthChecks().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConsulHttpError);
      expect(error).toMatchObject({ status: 403, body: 'ACL not found', code: 'CONSUL_HTTP_ERROR' });
      expect(`${String(error)} ${JSON.stringify(error)}`).not.toContain('not-the-token-xyz');
    } finally {
      await wrong.close();
    }
  });

  test('no token at all: the anonymous token sees no checks (default deny filters, it does not refuse)', async () => {
    consul.registerService({ allocId: ALLOC, task: 'web', service: 'web', checks: [{ name: 'a' }] });
    const anonymous = new ConsulClient({ address: consul.address }, { clock, gzip: false });
    try {
      expect((await anonymous.healthChecks()).body).toEqual([]);
    } finally {
      await anonymous.close();
    }
  });

  test('Consul unreachable: ConsulUnavailableError; the watch retries with exponential back-off on the clock', async () => {
    const errors: string[] = [];
    const at: number[] = [];
    const updates: ConsulChecksUpdate[] = [];
    const port = Number(new URL(consul.address).port);
    await consul.close();
    const down = new ConsulClient({ address: `http://127.0.0.1:${port}` }, { clock, gzip: false });
    try {
      await expect(down.healthChecks()).rejects.toBeInstanceOf(ConsulUnavailableError);
      const subscription = down.watchHealthChecks({ backoff: { random: () => 0 }, onError: (error) => { errors.push(error.name); at.push(clock.now()); } }).subscribe((u) => updates.push(u));
      for (let i = 0; i < 5; i++) {
        await flush();
        clock.advance(clock.nextDue() === undefined ? 0 : Math.max(0, (clock.nextDue() as number) - clock.now()));
      }
      await flush();
      expect(new Set(errors)).toEqual(new Set(['ConsulUnavailableError']));
      // Equal jitter with no randomness: half of 500, 1000, 2000... ms between attempts.
      expect(at.slice(1).map((t, i) => t - (at[i] as number))).toEqual([250, 500, 1000, 2000, 4000, 8000].slice(0, at.length - 1));
      expect(at.length).toBeGreaterThanOrEqual(4);
      expect(updates).toEqual([]);
      subscription.unsubscribe();
    } finally {
      await down.close();
    }
  });
});
