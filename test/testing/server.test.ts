import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Agent, request } from 'undici';
import { VirtualClock, settle } from '../../src/clock/index.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { call, serviceJob, useFake } from './helpers.js';
import { openStream } from './streamClient.js';

describe('FakeNomad HTTP server', () => {
  const env = useFake();

  it('listens on loopback and reports itself as a 1.1.2 leader with its raft index', async () => {
    expect(env.fake.address).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    env.fake.cluster.registerJob(serviceJob('web'));
    const self = JSON.parse((await call(env.fake.address, 'GET', '/v1/agent/self')).text) as { config: { Version: { Version: string } }; stats: { raft: { last_log_index: string } } };
    expect(self.config.Version.Version).toBe('1.1.2');
    expect(self.stats.raft.last_log_index).toBe(String(env.fake.cluster.index));
    expect((await call(env.fake.address, 'GET', '/v1/status/leader')).text).toBe('"127.0.0.1:4647"');
  });

  it('blocks a query until its index moves, then answers at once', async () => {
    env.fake.cluster.registerJob(serviceJob('web'));
    const first = await call(env.fake.address, 'GET', '/v1/job/web/allocations');
    const index = Number(first.headers['x-nomad-index']);
    let answer: Awaited<ReturnType<typeof call>> | undefined;
    void call(env.fake.address, 'GET', `/v1/job/web/allocations?index=${index}&wait=1m`).then((a) => (answer = a));
    await settle(20);
    env.clock.advance(30_000);
    await settle(20);
    expect(answer).toBeUndefined();
    const [alloc] = env.fake.cluster.placeAllocations('web', { count: 1 });
    await settle(20);
    expect(answer?.status).toBe(200);
    expect(Number(answer!.headers['x-nomad-index'])).toBeGreaterThan(index);
    expect((JSON.parse(answer!.text) as { ID: string }[]).map((a) => a.ID)).toEqual([alloc!.ID]);
    expect(await call(env.fake.address, 'GET', '/v1/allocations?index=x')).toMatchObject({ status: 400, text: 'Invalid index' });
    expect(await call(env.fake.address, 'GET', '/v1/allocations?index=1&wait=30')).toMatchObject({ status: 400, text: 'Invalid wait time' });
  });

  it('lists by prefix and namespace', async () => {
    env.fake.cluster.registerJob(serviceJob('web-a'));
    env.fake.cluster.registerJob(serviceJob('web-b'));
    env.fake.cluster.registerJob(serviceJob('api'));
    env.fake.cluster.registerJob(serviceJob('web-c', { Namespace: 'team' }));
    const ids = async (path: string) => (JSON.parse((await call(env.fake.address, 'GET', path)).text) as { ID: string }[]).map((j) => j.ID);
    expect(await ids('/v1/jobs?prefix=web')).toEqual(['web-a', 'web-b']);
    expect(await ids('/v1/jobs?namespace=team')).toEqual(['web-c']);
    expect(await ids('/v1/jobs?namespace=*&prefix=web')).toEqual(['web-a', 'web-b', 'web-c']);
    // Register: the job's own Namespace, whatever ?namespace= and the request's say; "default" when it has none (Nomad 1.1.2, measured).
    await call(env.fake.address, 'PUT', '/v1/jobs?namespace=ops', { Job: serviceJob('q', { Namespace: 'team' }), Namespace: 'batch' });
    await call(env.fake.address, 'PUT', '/v1/jobs?namespace=ops', { Job: { ...serviceJob('r'), Namespace: undefined }, Namespace: 'batch' });
    expect(await ids('/v1/jobs?namespace=ops')).toEqual([]);
    expect(await ids('/v1/jobs?namespace=team')).toEqual(['q', 'web-c']);
    expect(await ids('/v1/jobs?prefix=r')).toEqual(['r']);
  });

  it('gzips bodies and the event stream when asked', async () => {
    env.fake.cluster.registerJob(serviceJob('web'));
    const response = await request(`${env.fake.address}/v1/jobs`, { headers: { 'accept-encoding': 'gzip' } });
    expect(response.headers['content-encoding']).toBe('gzip');
    const body = gunzipSync(Buffer.from(await response.body.arrayBuffer())).toString();
    expect((JSON.parse(body) as { ID: string }[])[0]!.ID).toBe('web');
    const stream = await request(`${env.fake.address}/v1/event/stream?index=1`, { headers: { 'accept-encoding': 'gzip' } });
    expect(stream.headers['content-encoding']).toBe('gzip');
    const chunks: Buffer[] = [];
    stream.body.on('data', (c: Buffer) => chunks.push(c));
    // Each line is flushed as it is written, so what has arrived decompresses on its own.
    const arrived = (): string[] => gunzipSync(Buffer.concat(chunks), { finishFlush: 2 }).toString().split('\n');
    // zlib works on the thread pool: give it event-loop turns (not wall-clock waits) to finish.
    for (let turn = 0; turn < 2000 && arrived().length < 3; turn++) await settle(1);
    stream.body.destroy();
    const lines = arrived();
    expect(lines[0]).toBe('{}');
    expect((JSON.parse(lines[1]!) as { Events: { Key: string }[] }).Events[0]!.Key).toBe('web');
  });

  it('filters namespace "*" on the stream as 1.1.2 does, or as later Nomad does when asked', async () => {
    env.fake.cluster.registerJob(serviceJob('web'));
    const old = await openStream(env.fake, '?index=1&namespace=*');
    const wildcard = await FakeNomad.start({ clock: env.clock, namespaceWildcard: true });
    wildcard.cluster.registerJob(serviceJob('web'));
    wildcard.cluster.registerJob(serviceJob('api', { Namespace: 'team' }));
    const all = await openStream(wildcard, '?index=1&namespace=*');
    await settle(20);
    expect(old.dataLines()).toEqual([]);
    expect(all.dataLines().flatMap((b) => b.Events.map((e) => e.Key)).filter((k) => k === 'web' || k === 'api')).toEqual(['web', 'api']);
    old.close();
    all.close();
    await wildcard.close();
  });
});

describe('FakeNomad ACL token', () => {
  const env = useFake({ token: 's3cret-token' });

  it('answers 403 as Nomad does, never echoing the token', async () => {
    expect(await call(env.fake.address, 'GET', '/v1/jobs')).toMatchObject({ status: 403, text: 'Permission denied' });
    const wrong = await call(env.fake.address, 'GET', '/v1/jobs', undefined, { 'x-nomad-token': 'guess' });
    expect(wrong).toMatchObject({ status: 403, text: 'ACL token not found' });
    expect(await call(env.fake.address, 'GET', '/v1/jobs', undefined, { 'x-nomad-token': 's3cret-token' })).toMatchObject({ status: 200 });
    // Nomad 1.1.2 answers an unauthorised stream with a 500.
    expect(await call(env.fake.address, 'GET', '/v1/event/stream')).toMatchObject({ status: 500, text: 'Permission denied' });
  });
});

describe('FakeNomad over TLS', () => {
  let dir: string;
  const pem = (name: string): string => readFileSync(join(dir, name), 'utf8');
  const openssl = (...args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'fake-nomad-tls-'));
    openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=test-ca');
    for (const [name, subject, ext] of [
      ['server', '/CN=server.global.nomad', 'subjectAltName=DNS:server.global.nomad,IP:127.0.0.1'],
      ['client', '/CN=client.global.nomad', 'extendedKeyUsage=clientAuth'],
    ] as const) {
      openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
      writeFileSync(join(dir, `${name}.ext`), `${ext}\n`);
      openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '1', '-extfile', `${name}.ext`);
    }
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('serves https with mutual TLS: a client certificate from the CA is required', async () => {
    const fake = await FakeNomad.start({ clock: new VirtualClock(), tls: { cert: pem('server.pem'), key: pem('server.key'), ca: pem('ca.pem'), requestClientCert: true } });
    try {
      expect(fake.address).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const withCert = new Agent({ connect: { ca: pem('ca.pem'), cert: pem('client.pem'), key: pem('client.key') } });
      const ok = await request(`${fake.address}/v1/status/leader`, { dispatcher: withCert });
      expect(await ok.body.text()).toBe('"127.0.0.1:4647"');
      const anonymous = new Agent({ connect: { ca: pem('ca.pem') } });
      await expect(request(`${fake.address}/v1/status/leader`, { dispatcher: anonymous }).then((r) => r.body.text())).rejects.toThrow();
      const untrusting = new Agent({ connect: {} });
      await expect(request(`${fake.address}/v1/status/leader`, { dispatcher: untrusting })).rejects.toThrow(/certificate/i);
      await Promise.all([withCert.close(), anonymous.close(), untrusting.close()]);
    } finally {
      await fake.close();
    }
  });
});
