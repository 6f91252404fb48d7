/**
 * Unprivileged executions checked where the runners run (`warden serve --dev`, FakeNomad acting, real
 * processes): each environment's first runner runs `<shell> -c 'id -u'` as the privileged user and
 * through the wrapper. A wrapper that works is logged with both users; one that does not (Poseidon's
 * `/sbin/setuser`, which only its images have; one that drops to no other user) is said plainly: in
 * the log, in /health (503), and as the error of every unprivileged execution and file operation,
 * while privileged ones go on working.
 */
import { startServe, type ServeHarness } from './support/serveHarness.js';
import { asRoot } from '../testing/helpers.js';

const ENVIRONMENT = 1;

function records(logs: readonly string[]): { level: number | string; msg: string; [key: string]: unknown }[] {
  return logs.map((line) => JSON.parse(line) as { level: number | string; msg: string });
}

describe('a wrapper that works (setpriv to nobody, the default on raw_exec)', () => {
  let h: ServeHarness;
  const logs: string[] = [];
  beforeAll(async () => {
    h = await startServe({}, {}, logs);
    await h.environment(ENVIRONMENT, 1);
    await h.driveUntil(() => logs.some((line) => line.includes('unprivileged executions run as')));
  });
  afterAll(async () => {
    expect(await h.stop()).toBe(0);
  });

  asRoot('is logged with both users; /health stays 204; unprivileged executions run as nobody', async () => {
    const line = records(logs).find((record) => record.msg.includes('unprivileged executions run as'));
    expect(line).toMatchObject({ environmentId: ENVIRONMENT, privilegedUid: 0, unprivilegedUid: 65534, msg: 'environment 1: unprivileged executions run as uid 65534, privileged ones as uid 0' });
    expect((await h.call('GET', '/api/v1/health')).status).toBe(204);
    const id = await h.runner(ENVIRONMENT);
    expect((await h.run(id, { command: 'id -u' })).stdout).toBe('65534\r\n');
  });
});

describe('a wrapper that does not exist where the runners run (Poseidon\'s /sbin/setuser)', () => {
  let h: ServeHarness;
  const logs: string[] = [];
  let id: string;
  beforeAll(async () => {
    h = await startServe({ setuser: ['/sbin/setuser', 'user'] }, {}, logs);
    await h.environment(ENVIRONMENT, 2);
    await h.driveUntil(() => logs.some((line) => line.includes('unprivileged executions cannot run')));
    id = await h.runner(ENVIRONMENT);
  });
  afterAll(async () => {
    expect(await h.stop()).toBe(0);
  });

  it('is logged once, as a warning naming the wrapper and the error of the exec', async () => {
    const warnings = records(logs).filter((record) => record.msg.includes('unprivileged executions cannot run'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ kind: 'unprivileged-unavailable', environmentId: ENVIRONMENT });
    expect(warnings[0]?.msg).toMatch(/^environment 1: unprivileged executions cannot run: the unprivileged wrapper `\/sbin\/setuser user` does not work in the runners: exit code 127: .*\/sbin\/setuser.*: no such file or directory/i);
  });

  it('turns /health to 503 with the environment and the reason', async () => {
    const answer = await h.call('GET', '/api/v1/health');
    expect(answer.status).toBe(503);
    expect(answer.json).toMatchObject({ errorCode: 'UNKNOWN', message: expect.stringMatching(/^environment 1: unprivileged executions cannot run: the unprivileged wrapper `\/sbin\/setuser user`/) });
  });

  it("is the error of an unprivileged execution, in Poseidon's words and then why; privileged ones run", async () => {
    const refused = await h.run(id, { command: 'true' });
    expect(refused.control).toEqual([{ type: 'start' }, { type: 'error', data: expect.stringMatching(/^Error executing the request: unprivileged executions cannot run in execution environment 1: .*no such file or directory/i) }]);
    expect(refused.close).toBe(1000);
    expect(await h.run(id, { command: 'echo ok', privilegedExecution: true })).toMatchObject({ stdout: 'ok\r\n', control: [{ type: 'start' }, { type: 'exit', data: 0 }] });
  });

  it('is the 500 of an unprivileged listing or download, not a 424 hiding it; privileged ones work', async () => {
    for (const path of [`/api/v1/runners/${id}/files`, `/api/v1/runners/${id}/files/raw?path=x`]) {
      const answer = await h.call('GET', path);
      expect(answer.status).toBe(500);
      expect(answer.json).toMatchObject({ errorCode: 'UNKNOWN', message: expect.stringContaining('/sbin/setuser user') });
    }
    expect((await h.call('GET', `/api/v1/runners/${id}/files?privilegedExecution=true`)).status).toBe(200);
    // Writing is privileged, as Poseidon's: it works.
    expect((await h.copy(id, { 'a.txt': 'a' })).status).toBe(204);
  });
});

describe('a wrapper that drops to no other user', () => {
  let h: ServeHarness;
  const logs: string[] = [];
  beforeAll(async () => {
    h = await startServe({ setuser: ['env'] }, {}, logs);
    await h.environment(ENVIRONMENT, 1);
    await h.driveUntil(() => logs.some((line) => line.includes('unprivileged executions cannot run')));
  });
  afterAll(async () => {
    expect(await h.stop()).toBe(0);
  });

  it('fails the check: the unprivileged user would be the privileged one', async () => {
    const uid = process.getuid?.() ?? 0;
    const answer = await h.call('GET', '/api/v1/health');
    expect(answer.status).toBe(503);
    expect((answer.json as { message: string }).message).toBe(`environment 1: unprivileged executions cannot run: the unprivileged wrapper \`env\` runs commands as uid ${uid}, the same user as privileged executions`);
  });
});
