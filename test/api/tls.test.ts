/**
 * `warden serve --tls-cert … --tls-key …`: the API over HTTPS, WebSocket URLs wss:// (as Poseidon's
 * server.tls), an execution over it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServe, type ServeHarness } from './support/serveHarness.js';

describe('warden serve over TLS', () => {
  let h: ServeHarness;
  const dir = mkdtempSync(join(tmpdir(), 'warden-serve-tls-'));
  beforeAll(async () => {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', 'key.pem', '-out', 'cert.pem'], { cwd: dir, stdio: 'pipe' });
    h = await startServe({ tlsCert: join(dir, 'cert.pem'), tlsKey: join(dir, 'key.pem') });
    await h.environment(1, 1);
  });
  afterAll(async () => {
    expect(await h.stop()).toBe(0);
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves https, hands out wss:// URLs, and runs an execution over them', async () => {
    expect(h.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const runner = await h.runner(1);
    const url = await h.execute(runner, { command: 'echo secure' });
    expect(url).toMatch(/^wss:\/\/127\.0\.0\.1:\d+\/api\/v1\/runners\//);
    const conversation = await h.connect(url);
    expect((await conversation.closed).code).toBe(1000);
    expect(conversation.messages.at(-1)).toEqual({ type: 'exit', data: 0 });
  });
});
