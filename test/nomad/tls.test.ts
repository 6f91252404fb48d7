import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VirtualClock } from '../../src/clock/index.js';
import { NomadClient } from '../../src/nomad/client.js';
import { nomadConfigFromEnv } from '../../src/nomad/config.js';
import { tlsConnectOptions } from '../../src/nomad/connection.js';
import type { NomadHttpError } from '../../src/nomad/errors.js';
import { NomadConnectionError } from '../../src/nomad/errors.js';
import { nomadEventStream, type StreamState } from '../../src/nomad/eventStream.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { until } from './support.js';

/** A CA, a server certificate for server.global.nomad and 127.0.0.1, a client certificate, and an unrelated CA. */
function makeCertificates(dir: string): Record<'ca' | 'otherCa' | 'serverCert' | 'serverKey' | 'clientCert' | 'clientKey', string> {
  const run = (...args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ca = (name: string): void =>
    run('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', '2', '-subj', `/CN=${name}`);
  const leaf = (name: string, ext: string): void => {
    run('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    writeFileSync(join(dir, `${name}.ext`), ext);
    run('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', '-extfile', `${name}.ext`);
  };
  ca('ca');
  ca('other-ca');
  leaf('server', 'subjectAltName=DNS:server.global.nomad,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  leaf('client', 'extendedKeyUsage=clientAuth\n');
  const read = (file: string): string => readFileSync(join(dir, file), 'utf8');
  return {
    ca: read('ca.pem'),
    otherCa: read('other-ca.pem'),
    serverCert: read('server.pem'),
    serverKey: read('server.key'),
    clientCert: read('client.pem'),
    clientKey: read('client.key'),
  };
}

describe('TLS, mTLS and the ACL token', () => {
  let dir: string;
  let certs: ReturnType<typeof makeCertificates>;
  const clients: NomadClient[] = [];
  const fakes: FakeNomad[] = [];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'warden-tls-'));
    certs = makeCertificates(dir);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await Promise.all(fakes.splice(0).map((f) => f.close()));
  });

  async function start(options: Parameters<typeof FakeNomad.start>[0]): Promise<FakeNomad> {
    const fake = await FakeNomad.start(options);
    fakes.push(fake);
    return fake;
  }
  function connect(...args: ConstructorParameters<typeof NomadClient>): NomadClient {
    const client = new NomadClient(...args);
    clients.push(client);
    return client;
  }

  it('talks https to a server whose certificate chains to NOMAD_CACERT, verifying NOMAD_TLS_SERVER_NAME', async () => {
    const fake = await start({ tls: { cert: certs.serverCert, key: certs.serverKey } });
    const config = nomadConfigFromEnv({ NOMAD_ADDR: fake.address, NOMAD_CACERT: join(dir, 'ca.pem'), NOMAD_TLS_SERVER_NAME: 'server.global.nomad' });
    expect((await connect(config).listJobs()).body).toEqual([]);
  });

  it('refuses a server whose certificate does not chain to the configured CA, and a wrong server name', async () => {
    const fake = await start({ tls: { cert: certs.serverCert, key: certs.serverKey } });
    const wrongCa = connect({ address: fake.address, tls: { ca: [certs.otherCa] } });
    await expect(wrongCa.listJobs()).rejects.toBeInstanceOf(NomadConnectionError);
    const wrongName = connect({ address: fake.address, tls: { ca: [certs.ca], servername: 'server.other.nomad' } });
    await expect(wrongName.listJobs()).rejects.toThrow(/server\.other\.nomad|altnames|certificate/i);
    const skipVerify = connect(nomadConfigFromEnv({ NOMAD_ADDR: fake.address, NOMAD_SKIP_VERIFY: 'true' }));
    expect((await skipVerify.listJobs()).body).toEqual([]);
  });

  it('presents the client certificate for mTLS, and is refused without one', async () => {
    const fake = await start({ tls: { cert: certs.serverCert, key: certs.serverKey, ca: certs.ca, requestClientCert: true } });
    const env = { NOMAD_ADDR: fake.address, NOMAD_CACERT: join(dir, 'ca.pem'), NOMAD_CLIENT_CERT: join(dir, 'client.pem'), NOMAD_CLIENT_KEY: join(dir, 'client.key') };
    expect((await connect(nomadConfigFromEnv(env)).listJobs()).body).toEqual([]);
    const anonymous = connect({ address: fake.address, tls: { ca: [certs.ca] } });
    await expect(anonymous.listJobs()).rejects.toBeInstanceOf(NomadConnectionError);
  });

  it('exports the connect options the exec websocket reuses', () => {
    const config = { address: 'https://127.0.0.1:4646', tls: { ca: [certs.ca], cert: certs.clientCert, key: certs.clientKey, servername: 'server.global.nomad', rejectUnauthorized: false } };
    expect(tlsConnectOptions(config)).toEqual({ ca: [certs.ca], cert: certs.clientCert, key: certs.clientKey, servername: 'server.global.nomad', rejectUnauthorized: false });
    expect(tlsConnectOptions({ address: 'http://127.0.0.1:4646' })).toEqual({});
  });

  it('sends the token on the wire and never puts it in an error or the stream state', async () => {
    const token = 'c0ffee00-token-must-stay-secret-0000';
    const clock = new VirtualClock({ start: 1_795_971_900_000 });
    const fake = await start({ token, clock });
    const good = connect({ address: fake.address, token }, { clock });
    expect((await good.listJobs()).body).toEqual([]); // accepted: the header reached the server

    const wrong = connect({ address: fake.address, token: `${token}-wrong` }, { clock });
    const error = (await wrong.listJobs().catch((e: unknown) => e)) as NomadHttpError;
    expect(error).toMatchObject({ status: 403, body: 'ACL token not found' });

    const states: StreamState[] = [];
    const stream = nomadEventStream(wrong, { topics: ['Job'], clock, backoff: { random: () => 0.5 } });
    const subscription = stream.state.subscribe((s) => states.push(s));
    const batches = stream.batches.subscribe({ error: () => undefined });
    await until(clock, () => states.some((s) => s.status === 'backingOff' || s.status === 'failed'), 'stream refused');
    batches.unsubscribe();
    subscription.unsubscribe();

    const texts = [error.message, error.stack ?? '', JSON.stringify(error), String(error), ...states.map((s) => `${s.error?.message} ${JSON.stringify(s)}`)];
    for (const text of texts) expect(text).not.toContain(token);
    expect(texts.join('\n')).toMatch(/ACL token not found|Permission denied/);
  });
});
