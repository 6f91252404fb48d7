/**
 * Poseidon's authentication on `warden serve`: with a token configured (WARDEN_SERVE_TOKEN, or
 * Poseidon's own POSEIDON_SERVER_TOKEN), every route but /health and /version needs it in the
 * Poseidon-Token header (401 with no body otherwise), the WebSocket included; the token, right or
 * wrong, never appears in an answer, a message or a log line.
 */
import { request } from 'undici';
import { startServe, type ServeHarness } from './support/serveHarness.js';

const TOKEN = 'correct-horse-battery-staple';
const WRONG = 'Tr0ub4dor&3-not-the-token';

describe('warden serve: Poseidon-Token', () => {
  let h: ServeHarness;
  const logs: string[] = [];
  beforeAll(async () => {
    h = await startServe({}, { WARDEN_SERVE_TOKEN: TOKEN }, logs);
    await h.environment(1, 2);
  });
  afterAll(async () => {
    expect(await h.stop()).toBe(0);
    const everything = [...logs, ...h.lines, ...h.errors, ...h.seen.map((s) => JSON.stringify(s))].join('\n');
    expect(everything).not.toContain(TOKEN);
    expect(everything).not.toContain(WRONG);
  });

  const without = async (method: string, path: string, token?: string) => {
    const answer = await request(`${h.url}${path}`, { method: method as 'GET', headers: token === undefined ? {} : { 'poseidon-token': token } });
    return { status: answer.statusCode, text: await answer.body.text() };
  };

  it.each([
    ['GET', '/api/v1/statistics/execution-environments'],
    ['GET', '/api/v1/execution-environments'],
    ['GET', '/api/v1/execution-environments/1'],
    ['PUT', '/api/v1/execution-environments/1'],
    ['DELETE', '/api/v1/execution-environments/1'],
    ['POST', '/api/v1/runners'],
    ['DELETE', '/api/v1/runners/1-x'],
    ['GET', '/api/v1/runners/1-x/files'],
    ['PATCH', '/api/v1/runners/1-x/files'],
    ['GET', '/api/v1/runners/1-x/files/raw'],
    ['POST', '/api/v1/runners/1-x/execute'],
    ['GET', '/api/v1/runners/1-x/websocket'],
  ])('%s %s: 401 with no body without the token or with a wrong one', async (method, path) => {
    expect(await without(method, path)).toEqual({ status: 401, text: '' });
    expect(await without(method, path, WRONG)).toEqual({ status: 401, text: '' });
    expect(await without(method, path, `${TOKEN}x`)).toEqual({ status: 401, text: '' });
  });

  it('/health and /version need no token', async () => {
    expect((await without('GET', '/api/v1/health')).status).toBe(204);
    expect((await without('GET', '/api/v1/version')).status).toBe(200);
  });

  it('with the token everything works, the WebSocket included; without it the upgrade is refused', async () => {
    const runner = await h.runner(1, 60);
    const url = await h.execute(runner, { command: 'echo ok' });
    await expect(h.connect(url, { 'poseidon-token': WRONG })).rejects.toMatchObject({ status: 401 });
    const run = await h.connect(url);
    await run.closed;
    expect(run.messages.at(-1)).toEqual({ type: 'exit', data: 0 });
  });

  it('refusals are logged, without the token given', async () => {
    expect(logs.some((line) => line.includes('missing or wrong Poseidon-Token'))).toBe(true);
  });

  it("Poseidon's own variable works too, and the printed curl lines name the variable, not the token", async () => {
    const other = await startServe({}, { POSEIDON_SERVER_TOKEN: TOKEN });
    try {
      expect((await without('GET', '/api/v1/execution-environments')).status).toBe(401);
      const answer = await request(`${other.url}/api/v1/execution-environments`, { headers: { 'poseidon-token': TOKEN } });
      expect(answer.statusCode).toBe(200);
      await answer.body.text();
      expect(other.lines.join('\n')).toContain('-H "Poseidon-Token: $POSEIDON_SERVER_TOKEN"');
      expect(other.lines.join('\n')).not.toContain(TOKEN);
    } finally {
      await other.stop();
    }
  });
});
