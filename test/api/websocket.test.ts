/**
 * Poseidon's end-to-end behaviours of executions over its WebSocket protocol
 * (tests/e2e/websocket_test.go), rewritten against `warden serve --dev`: start, output on stdout and
 * stderr kept apart under the terminal, input to stdin, the exit code, privileged and unprivileged
 * users, environment variables, time limits, the stderr fifo removed, a client that hangs up,
 * concurrent executions in one runner, and an execution whose runner is destroyed under it.
 */
import { existsSync } from 'node:fs';
import { startServe, output, type ServeHarness } from './support/serveHarness.js';

const ENVIRONMENT = 1;

describe('warden serve: executions over the WebSocket (Poseidon e2e)', () => {
  let h: ServeHarness;
  beforeAll(async () => {
    h = await startServe();
    await h.environment(ENVIRONMENT, 4);
  });
  afterAll(async () => {
    expect(await h.stop()).toBe(0);
  });

  const runner = (inactivityTimeout = 0): Promise<string> => h.runner(ENVIRONMENT, inactivityTimeout);
  /** Poseidon's ExecuteNonInteractive: start first, exactly one control message after it (the exit), a normal close. */
  async function nonInteractive(execution: Record<string, unknown>, files?: Record<string, string>) {
    const id = await runner();
    if (files) expect((await h.copy(id, files)).status).toBe(204);
    const conversation = await h.connect(await h.execute(id, execution));
    const { code } = await conversation.closed;
    expect(code).toBe(1000);
    expect(conversation.messages[0]).toEqual({ type: 'start' });
    const { stdout, stderr, control } = output(conversation.messages.slice(1));
    expect(control).toHaveLength(1);
    expect(control[0]?.type).toBe('exit');
    return { stdout, stderr, exitCode: control[0]?.data };
  }

  it('`true`: start, exit 0, then a normal close', async () => {
    const id = await runner();
    const url = await h.execute(id, { command: 'true' });
    expect(url).toMatch(new RegExp(`^ws://127\\.0\\.0\\.1:\\d+/api/v1/runners/${id}/websocket\\?executionID=[0-9a-f-]{36}$`));
    const conversation = await h.connect(url);
    const { code } = await conversation.closed;
    expect(conversation.messages).toEqual([{ type: 'start' }, { type: 'exit', data: 0 }]);
    expect(code).toBe(1000);
  });

  it('output to stdout', async () => {
    expect((await nonInteractive({ command: 'echo -n Hello World' })).stdout).toBe('Hello World');
  });

  it('output to stderr, kept apart from stdout under the terminal; the exit code', async () => {
    const { stdout, stderr, exitCode } = await nonInteractive({ command: 'cat -invalid' });
    expect(stdout).not.toContain('cat: invalid option');
    expect(stderr).toContain('cat: invalid option');
    expect(exitCode).toBe(1);
  });

  it('exit codes come back as they are (0-255)', async () => {
    expect((await nonInteractive({ command: 'exit 255' })).exitCode).toBe(255);
    expect((await nonInteractive({ command: 'exit 42' })).exitCode).toBe(42);
  });

  it('the user: unprivileged by default, root when privileged', async () => {
    const unprivileged = await nonInteractive({ command: 'id --name --user', privilegedExecution: false });
    if (process.getuid?.() === 0) expect(unprivileged.stdout.trim()).not.toBe('root');
    expect((await nonInteractive({ command: 'id --name --user', privilegedExecution: true })).stdout).toContain(process.getuid?.() === 0 ? 'root' : '');
  });

  it('input goes to the command: `head -n 1` reads the line the client sends (echoed by the terminal)', async () => {
    const id = await runner();
    const conversation = await h.connect(await h.execute(id, { command: 'head -n 1' }));
    await conversation.next('start');
    conversation.ws.send('Hello World!\n');
    const { code } = await conversation.closed;
    expect(code).toBe(1000);
    expect(output(conversation.messages).stdout).toMatch(/(Hello World!\r\n?){2}/);
    expect(conversation.messages.at(-1)).toEqual({ type: 'exit', data: 0 });
  });

  it('make runs a Makefile copied into the runner', async () => {
    const makefile = 'run:\n\t@echo MeinText\n\ntest:\n\t@echo Hi\n';
    const { stdout } = await nonInteractive({ command: 'make run' }, { Makefile: makefile });
    expect(stdout.replace(/\r?\n$/, '')).toBe('MeinText');
  });

  it("environment variables: the request's, CODEOCEAN=true, none of Nomad's (also through make)", async () => {
    const variables = (stdout: string): string[] => stdout.replaceAll('\r\n', '\n').split('\n');
    const direct = variables((await nonInteractive({ command: 'env', environment: { hello: 'world' } })).stdout);
    expect(direct).toContain('hello=world');
    const viaMake = variables((await nonInteractive({ command: 'make run' }, { Makefile: 'run:\n\t@env\n' })).stdout);
    for (const list of [direct, viaMake]) {
      expect(list).toContain('CODEOCEAN=true');
      expect(list.filter((line) => line.startsWith('NOMAD_'))).toEqual([]);
    }
  });

  it('a time limit ends the command: the last message is a timeout, then a normal close', async () => {
    const id = await runner();
    const conversation = await h.connect(await h.execute(id, { command: 'sleep 600', timeLimit: 1 }));
    await conversation.next('start');
    await h.drive(900);
    expect(conversation.messages).toEqual([{ type: 'start' }]);
    await h.drive(200);
    expect((await conversation.closed).code).toBe(1000);
    expect(conversation.messages.at(-1)).toEqual({ type: 'timeout' });
  });

  it("stderr's fifo under the terminal leaves nothing behind in /tmp", async () => {
    // Poseidon's e2e sees a .fifo in /tmp during the execution; Warden unlinks it as soon as both
    // ends are open, so not even a killed execution leaves one: the command's stderr is the fifo, unlinked.
    const { stdout } = await nonInteractive({ command: 'readlink /proc/$$/fd/2' });
    const [, path] = /^(\/tmp\/warden-stderr-[0-9a-f-]+\.fifo) \(deleted\)\r?\n$/.exec(stdout) ?? [];
    expect(path).toBeDefined();
    expect(existsSync(path!)).toBe(false);
  });

  it('a client that hangs up at once ends its execution; the runner goes on serving', async () => {
    const id = await runner();
    for (let i = 0; i < 3; i++) {
      const conversation = await h.connect(await h.execute(id, { command: 'sleep 2' }));
      conversation.ws.close(1000);
      await conversation.closed;
    }
    const after = await h.run(id, { command: 'echo still here' });
    expect(after).toMatchObject({ stdout: 'still here\r\n', close: 1000 });
    expect(h.errors).toEqual([]);
  });

  it('concurrent executions in one runner each get their own output and exit code', async () => {
    const id = await runner();
    const commands = ['echo one; sleep 0.2; echo one-done; exit 1', 'echo two >&2; exit 2', 'read line; echo "three:$line"; exit 3'];
    const conversations = await Promise.all(commands.map(async (command) => h.connect(await h.execute(id, { command }))));
    await conversations[2]!.next('start');
    conversations[2]!.ws.send('input\n');
    const ended = await Promise.all(conversations.map(async (c) => ({ code: (await c.closed).code, ...output(c.messages) })));
    expect(ended[0]).toMatchObject({ code: 1000, stdout: 'one\r\none-done\r\n', stderr: '', control: [{ type: 'start' }, { type: 'exit', data: 1 }] });
    expect(ended[1]).toMatchObject({ code: 1000, stdout: '', stderr: 'two\n', control: [{ type: 'start' }, { type: 'exit', data: 2 }] });
    expect(ended[2]?.stdout).toContain('three:input');
    expect(ended[2]?.control.at(-1)).toEqual({ type: 'exit', data: 3 });
  });

  it('a runner destroyed under a running execution: the client is told, and the runner is gone', async () => {
    const id = await runner();
    const conversation = await h.connect(await h.execute(id, { command: 'sleep 60' }));
    await conversation.next('start');
    expect((await h.settled(h.call('DELETE', `/api/v1/runners/${id}`))).status).toBe(204);
    expect((await conversation.closed).code).toBe(1000);
    expect(conversation.messages.at(-1)).toEqual({ type: 'error', data: 'the allocation stopped as expected' });
    expect((await h.call('POST', `/api/v1/runners/${id}/execute`, { body: { command: 'true' } })).status).toBe(410);
  });

  it('an execution runs once: a second connection with its ID, or an unknown ID, is 404', async () => {
    const id = await runner();
    const url = await h.execute(id, { command: 'true' });
    await (await h.connect(url)).closed;
    await expect(h.connect(url)).rejects.toMatchObject({ status: 404 });
    await expect(h.connect(url.replace(/executionID=.*/, 'executionID=nope'))).rejects.toMatchObject({ status: 404 });
    const answer = await h.call('GET', new URL(url.replace(/^ws/, 'http')).pathname + '?executionID=nope');
    expect(answer).toMatchObject({ status: 404, json: { message: 'execution id unknown' } });
  });

  it('multi-byte characters are never split between two messages', async () => {
    const { stdout } = await nonInteractive({ command: 'for i in $(seq 1 2000); do printf "ü€😀"; done' });
    expect(stdout).toBe('ü€😀'.repeat(2000));
  });
});

describe('warden serve --no-tty (and --dev without node-pty): executions on pipes', () => {
  let h: ServeHarness;
  beforeAll(async () => {
    h = await startServe({ tty: false });
    await h.environment(ENVIRONMENT, 1);
  });
  afterAll(async () => {
    expect(await h.stop()).toBe(0);
  });

  it('output apart, the exit code; the command reads no input (stdin closed: Nomad reports a pipe command exit only then)', async () => {
    const id = await h.runner(ENVIRONMENT);
    const result = await h.run(id, { command: 'echo out; echo err >&2; cat; exit 5' });
    expect(result).toMatchObject({ stdout: 'out\n', stderr: 'err\n', close: 1000, control: [{ type: 'start' }, { type: 'exit', data: 5 }] });
    const conversation = await h.connect(await h.execute(id, { command: 'sleep 30', timeLimit: 1 }));
    await conversation.next('start');
    conversation.ws.send('ignored\n');
    await h.drive(1_100);
    expect((await conversation.closed).code).toBe(1000);
    expect(conversation.messages.at(-1)).toEqual({ type: 'timeout' });
  });
});
