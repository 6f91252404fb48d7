/**
 * Wrong input on every endpoint of `warden serve` gets Poseidon's answers: 400 with `{"message"}`
 * for a body or parameter that cannot be read, 404 / 410 for what does not exist, 405 for a method a
 * route does not take, empty bodies where Poseidon sends none; never a stack trace, and the server
 * goes on serving.
 */
import { startServe, type Answer, type ServeHarness } from './support/serveHarness.js';

const ENVIRONMENT = 1;
const GONE = '1-00000000-0000-4000-8000-000000000000';

describe('warden serve: bad input on every endpoint', () => {
  let h: ServeHarness;
  let runner: string;
  beforeAll(async () => {
    h = await startServe();
    await h.environment(ENVIRONMENT, 2);
    runner = await h.runner(ENVIRONMENT, 600);
  });
  afterAll(async () => {
    expect(await h.stop()).toBe(0);
  });

  /** A Poseidon client error: the status, `{"message"}` and nothing that looks like a stack. */
  function clientError(answer: Answer, status: number, message?: RegExp | string): void {
    expect(answer.status).toBe(status);
    expect(answer.headers['content-type']).toBe('application/json');
    expect(Object.keys(answer.json as object)).toEqual(['message']);
    const text = (answer.json as { message: string }).message;
    if (message !== undefined) expect(text).toMatch(message);
    expect(text).not.toMatch(/\n\s+at |node_modules|\.ts:\d+/);
  }

  describe('request bodies that are not what the route reads: 400', () => {
    const bodies: [string, string, string][] = [
      ['PUT', `/api/v1/execution-environments/${ENVIRONMENT + 5}`, 'environment'],
      ['POST', '/api/v1/runners', 'runner request'],
      ['PATCH', '/api/v1/runners/{runner}/files', 'file update'],
      ['POST', '/api/v1/runners/{runner}/execute', 'execution'],
    ];
    it.each(bodies)('%s %s: empty, not JSON, not an object', async (method, route) => {
      const path = route.replace('{runner}', runner);
      clientError(await h.call(method, path, { raw: '' }), 400, /empty/);
      clientError(await h.call(method, path, { raw: '{"prewarmingPoolSize": 1,' }), 400, /not valid JSON/);
      clientError(await h.call(method, path, { raw: '[1, 2]' }), 400, /must be a JSON object/);
      clientError(await h.call(method, path, { raw: '"text"' }), 400, /must be a JSON object/);
      clientError(await h.call(method, path, { raw: 'null' }), 400, /must be a JSON object/);
    });
  });

  describe('PUT /execution-environments/{id}', () => {
    const put = (body: unknown, id = 77) => h.settled(h.call('PUT', `/api/v1/execution-environments/${id}`, { body }));
    const valid = { prewarmingPoolSize: 0, cpuLimit: 100, memoryLimit: 256, image: 'local', networkAccess: false, exposedPorts: [] };
    it.each([
      [{ ...valid, prewarmingPoolSize: -1 }, /prewarmingPoolSize must be between 0/],
      [{ ...valid, prewarmingPoolSize: 1.5 }, /prewarmingPoolSize must be an integer/],
      [{ ...valid, prewarmingPoolSize: '3' }, /prewarmingPoolSize must be an integer/],
      [{ ...valid, cpuLimit: 0 }, /cpuLimit must be a whole number ≥ 1/],
      [{ ...valid, cpuLimit: 2 ** 40 }, /cpuLimit must be between/],
      [{ ...valid, memoryLimit: true }, /memoryLimit must be an integer/],
      [{ ...valid, image: 42 }, /image must be a string/],
      [{ ...valid, networkAccess: 'yes' }, /networkAccess must be true or false/],
      [{ ...valid, exposedPorts: 80 }, /exposedPorts must be an array/],
      [{ ...valid, exposedPorts: [70000] }, /exposedPorts\[0\] must be between 0 and 65535/],
      [{ ...valid, exposedPorts: [80] }, /exposed ports need network access/],
      [{ ...valid, networkAccess: true, exposedPorts: [0] }, /exposed port 0 is not a port number/],
      [{ ...valid, image: 'a\u0000b' }, /NUL/],
    ])('%j → 400', async (body, message) => {
      clientError(await put(body), 400, message);
      expect((await h.call('GET', '/api/v1/execution-environments/77')).status).toBe(404);
    });

    it("absent fields are Go's zero values (Poseidon's decoding); unknown fields are ignored; the body's id is the path's", async () => {
      clientError(await put({ image: 'local' }), 400, /cpuLimit must be a whole number ≥ 1/);
      const created = await put({ ...valid, exposedPorts: null, id: 999, comment: 'ignored' });
      expect(created.status).toBe(201);
      expect((await h.call('GET', '/api/v1/execution-environments/77')).json).toMatchObject({ id: 77, exposedPorts: [] });
      expect((await h.call('GET', '/api/v1/execution-environments/999')).status).toBe(404);
      expect((await h.settled(h.call('DELETE', '/api/v1/execution-environments/77'))).status).toBe(204);
    });

    it('an id that is no number is no route (404); one beyond any integer is 400', async () => {
      expect(await h.call('PUT', '/api/v1/execution-environments/abc', { body: valid })).toMatchObject({ status: 404, text: '' });
      expect(await h.call('PUT', '/api/v1/execution-environments/-1', { body: valid })).toMatchObject({ status: 404, text: '' });
      clientError(await h.call('PUT', '/api/v1/execution-environments/99999999999999999999', { body: valid }), 400, /could not parse/);
      clientError(await h.call('GET', '/api/v1/execution-environments/99999999999999999999'), 400);
      clientError(await h.call('DELETE', '/api/v1/execution-environments/99999999999999999999'), 400);
    });
  });

  describe('GET /execution-environments and /execution-environments/{id}', () => {
    it('fetch must be a boolean as Go reads one', async () => {
      clientError(await h.call('GET', '/api/v1/execution-environments?fetch=maybe'), 400, /could not parse fetch parameter/);
      clientError(await h.call('GET', `/api/v1/execution-environments/${ENVIRONMENT}?fetch=2`), 400, /could not parse fetch parameter/);
      expect((await h.settled(h.call('GET', '/api/v1/execution-environments?fetch=T'))).status).toBe(200);
      expect((await h.call('GET', '/api/v1/execution-environments?fetch=0'))).toMatchObject({ status: 200 });
    });
  });

  describe('POST /runners', () => {
    it.each([
      [{}, /executionEnvironmentId is required/],
      [{ executionEnvironmentId: null }, /executionEnvironmentId is required/],
      [{ executionEnvironmentId: '1' }, /executionEnvironmentId must be an integer/],
      [{ executionEnvironmentId: -1 }, /executionEnvironmentId must be between 0/],
      [{ executionEnvironmentId: 1, inactivityTimeout: -5 }, /inactivityTimeout must be between 0/],
      [{ executionEnvironmentId: 1, inactivityTimeout: 0.5 }, /inactivityTimeout must be an integer/],
    ])('%j → 400', async (body, message) => {
      clientError(await h.call('POST', '/api/v1/runners', { body }), 400, message);
    });
  });

  describe('runner routes', () => {
    it.each([
      ['DELETE', ''],
      ['GET', '/files'],
      ['PATCH', '/files'],
      ['GET', '/files/raw?path=x'],
      ['POST', '/execute'],
      ['GET', '/websocket?executionID=x'],
    ])('%s /runners/<unknown>%s → 410, whatever the body', async (method, suffix) => {
      for (const id of [GONE, 'not-a-runner', '%E2%82%AC', 'template-1']) {
        clientError(await h.call(method, `/api/v1/runners/${id}${suffix}`, method === 'GET' || method === 'DELETE' ? {} : { raw: '{"broken' }), 410, 'no runner found with this id');
      }
    });

    it('a malformed escape in the runner id is no route (404)', async () => {
      expect(await h.call('DELETE', '/api/v1/runners/%E2%8')).toMatchObject({ status: 404, text: '' });
    });
  });

  describe('PATCH /runners/{id}/files', () => {
    const patch = (body: unknown) => h.call('PATCH', `/api/v1/runners/${runner}/files`, { body });
    it.each([
      [{ copy: {} }, /copy must be an array/],
      [{ copy: ['a.txt'] }, /copy\[0\] must be a JSON object/],
      [{ copy: [{ content: 'aGk=' }] }, /copy\[0\]\.path is required/],
      [{ copy: [{ path: '' }] }, /copy\[0\]\.path must not be empty/],
      [{ copy: [{ path: 'a\u0000b' }] }, /NUL/],
      [{ copy: [{ path: 'a.txt', content: 'not base64!' }] }, /copy\[0\]\.content must be base64/],
      [{ copy: [{ path: 'a.txt', content: 'aGk' }] }, /must be base64/],
      [{ copy: [{ path: 'a.txt', content: 7 }] }, /content must be a string/],
      [{ delete: 'a.txt' }, /delete must be an array/],
      [{ delete: [3] }, /delete\[0\] must be a string/],
      [{ delete: [''] }, /delete\[0\] must not be empty/],
    ])('%j → 400, nothing written', async (body, message) => {
      clientError(await patch(body), 400, message);
    });

    it('base64 with line breaks (as some encoders wrap it) is read as Go reads it', async () => {
      expect((await patch({ copy: [{ path: 'wrapped.txt', content: 'aGVsbG8g\nd29ybGQ=' }] })).status).toBe(204);
      expect((await h.call('GET', `/api/v1/runners/${runner}/files/raw?path=wrapped.txt`)).text).toBe('hello world');
    });

    it('a body beyond the limit is refused with 413 before it is read whole', async () => {
      const big = 'A'.repeat(65 * 1024 * 1024);
      const answer = await h.call('PATCH', `/api/v1/runners/${runner}/files`, { raw: `{"copy":[{"path":"big","content":"${big}"}]}` });
      clientError(answer, 413, /larger than/);
    });
  });

  describe('GET /runners/{id}/files and /files/raw', () => {
    it('flags that do not read as booleans take their defaults (as Poseidon), paths that do not exist are 424', async () => {
      expect((await h.call('GET', `/api/v1/runners/${runner}/files?recursive=perhaps&privilegedExecution=no`)).status).toBe(200);
      clientError(await h.call('GET', `/api/v1/runners/${runner}/files?path=${encodeURIComponent("does not ' exist")}`), 424);
      clientError(await h.call('GET', `/api/v1/runners/${runner}/files/raw`), 424);
      clientError(await h.call('GET', `/api/v1/runners/${runner}/files/raw?path=.`), 424);
      clientError(await h.call('GET', `/api/v1/runners/${runner}/files/raw?path=${encodeURIComponent('$(touch pwned)')}`), 424);
      const listing = (await h.call('GET', `/api/v1/runners/${runner}/files`)).json as { files: { name: string }[] };
      expect(listing.files.map((f) => f.name)).not.toContain('./pwned');
    });

    it('a file name that would break a header is quoted in Content-Disposition', async () => {
      const name = 'we"ird\\näme.txt';
      expect((await h.copy(runner, { [name]: 'x' })).status).toBe(204);
      const answer = await h.call('GET', `/api/v1/runners/${runner}/files/raw?path=${encodeURIComponent(name)}`);
      expect(answer.status).toBe(200);
      expect(answer.headers['content-disposition']).toBe(`attachment; filename="we\\"ird\\\\n_me.txt"; filename*=UTF-8''${encodeURIComponent(name)}`);
    });
  });

  describe('POST /runners/{id}/execute', () => {
    const execute = (body: unknown) => h.call('POST', `/api/v1/runners/${runner}/execute`, { body });
    it.each([
      [{}, /command is required/],
      [{ command: 42 }, /command must be a string/],
      [{ command: "echo 'quoted'" }, /^use of forbidden character$/],
      [{ command: 'true', timeLimit: -1 }, /timeLimit must be between 0/],
      [{ command: 'true', timeLimit: '5' }, /timeLimit must be an integer/],
      [{ command: 'true', privilegedExecution: 'true' }, /privilegedExecution must be true or false/],
      [{ command: 'true', environment: [] }, /environment must be a JSON object/],
      [{ command: 'true', environment: { 'A B': 'x' } }, /is not a variable name/],
      [{ command: 'true', environment: { '1A': 'x' } }, /is not a variable name/],
      [{ command: 'true', environment: { A: 1 } }, /environment\.A must be a string/],
    ])('%j → 400', async (body, message) => {
      clientError(await execute(body), 400, message);
    });

    it('environment values with shell syntax arrive unchanged', async () => {
      const value = '$(id) `id` ; & | " \\ $HOME';
      const { stdout } = await h.run(runner, { command: 'printf %s "$VALUE"', environment: { VALUE: value } });
      expect(stdout).toBe(value);
    });
  });

  describe('GET /runners/{id}/websocket', () => {
    it('a plain GET (no upgrade) of a stored execution is 400; an unknown execution 404', async () => {
      const url = new URL((await h.execute(runner, { command: 'true' })).replace(/^ws/, 'http'));
      clientError(await h.call('GET', `${url.pathname}${url.search}`), 400, /WebSocket/);
      clientError(await h.call('GET', `${url.pathname}?executionID=`), 404, 'execution id unknown');
      // The plain GET did not use it up.
      const conversation = await h.connect(url.toString().replace(/^http/, 'ws'));
      await conversation.closed;
      expect(conversation.messages.at(-1)).toEqual({ type: 'exit', data: 0 });
    });

    it('binary frames are not input; the execution goes on', async () => {
      const conversation = await h.connect(await h.execute(runner, { command: 'head -n 1' }));
      await conversation.next('start');
      conversation.ws.send(Buffer.from('binary\n'), { binary: true });
      conversation.ws.send('text\n');
      await conversation.closed;
      const text = conversation.messages.filter((m) => m.type === 'stdout').map((m) => m.data).join('');
      expect(text).not.toContain('binary');
      expect(text).toContain('text');
    });

    it('an upgrade on a route that is not a WebSocket is refused', async () => {
      await expect(h.connect(`${h.api.replace(/^http/, 'ws')}/execution-environments`)).rejects.toMatchObject({ status: 400 });
      await expect(h.connect(`${h.api.replace(/^http/, 'ws')}/nothing`)).rejects.toMatchObject({ status: 404 });
    });
  });

  describe('routes and methods', () => {
    it.each([
      ['GET', '/'],
      ['GET', '/api/v1'],
      ['GET', '/api/v1/'],
      ['GET', '/api/v2/health'],
      ['GET', '/api/v1/runners/'],
      ['GET', '/api/v1/execution-environments/'],
      ['POST', '/api/v1/health/extra'],
      ['GET', '/api/v1/statistics'],
    ])('%s %s → 404 with no body', async (method, path) => {
      expect(await h.call(method, path)).toMatchObject({ status: 404, text: '' });
    });

    it.each([
      ['POST', '/api/v1/health', 'GET'],
      ['DELETE', '/api/v1/execution-environments', 'GET'],
      ['POST', `/api/v1/execution-environments/${ENVIRONMENT}`, 'GET, PUT, DELETE'],
      ['GET', '/api/v1/runners', 'POST'],
      ['PUT', '/api/v1/runners/x/files', 'GET, PATCH'],
      ['GET', '/api/v1/runners/x/execute', 'POST'],
    ])('%s %s → 405, Allow: %s', async (method, path, allow) => {
      const answer = await h.call(method, path);
      expect(answer).toMatchObject({ status: 405, text: '' });
      expect(answer.headers.allow).toBe(allow);
    });
  });

  it('after all of it the server still serves, and no request failed inside it', async () => {
    expect((await h.call('GET', '/api/v1/health')).status).toBe(204);
    expect(h.errors).toEqual([]);
    const metrics = await h.call('GET', '/metrics');
    expect(metrics.text).not.toMatch(/code="5\d\d"[^\n]*route="\/api\/v1\/runners\/\{runnerId\}\/files"/);
  });
});
