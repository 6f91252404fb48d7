/**
 * `warden serve` as an operator runs it against the live agent: the installed package
 * (test/cli/support/packedWarden.ts: the packed tarball, plain node) in a process of its own, with
 * Warden's defaults unless a suite names options, reached only as a Poseidon client reaches it (HTTP,
 * WebSocket). Waits are on what the process prints or on the API's answers, each with a bound.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import WebSocket from 'ws';
import { packedWarden } from '../../cli/support/packedWarden.js';
import { liveEnv } from './live.js';

export { liveNamespace, type LiveNamespace } from './namespace.js';

/** A server message of Poseidon's WebSocket protocol. */
export interface Message {
  type: string;
  data?: string | number;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

export interface Ran {
  stdout: string;
  stderr: string;
  /** Every message that is not output: start, then exit / timeout / error. */
  control: Message[];
  close: number;
}

export interface Conversation {
  ws: WebSocket;
  messages: Message[];
  closed: Promise<number>;
  /** Resolves once a message of the type arrived. */
  next(type: string): Promise<Message>;
}

export interface ServeProcess {
  readonly child: ChildProcess;
  /** http://127.0.0.1:<port>/api/v1 */
  readonly api: string;
  /** What it printed on stdout, and its log lines (JSON, stderr). */
  readonly stdout: string[];
  readonly logs: string[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Resolves once `done()` holds, checking every `everyMs`; rejects after `timeoutMs` saying what it waited for. */
export async function until(what: string, done: () => boolean | Promise<boolean>, timeoutMs = 60_000, everyMs = 100): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await done()) return;
    if (performance.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Starts the installed `warden serve` on a free port against the live agent; resolves once it prints its address. */
export async function startServeProcess(args: readonly string[] = [], env: NodeJS.ProcessEnv = {}): Promise<ServeProcess> {
  const warden = await packedWarden();
  const child = spawn(warden.bin, ['--log-format', 'json', 'serve', '--listen', '127.0.0.1:0', ...args], {
    cwd: warden.project,
    env: liveEnv({ NO_COLOR: '1', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  const logs: string[] = [];
  const lines = (into: string[]) => {
    let rest = '';
    return (chunk: Buffer): void => {
      const parts = (rest + chunk.toString()).split('\n');
      rest = parts.pop() ?? '';
      into.push(...parts);
    };
  };
  child.stdout?.on('data', lines(stdout));
  child.stderr?.on('data', lines(logs));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let gone = false;
  void exited.then(() => (gone = true));
  await until('warden serve to print its address', () => gone || stdout.some((line) => line.startsWith('Try it')), 60_000);
  const api = /at (http:\/\/127\.0\.0\.1:\d+\/api\/v1)$/.exec(stdout[0] ?? '')?.[1];
  if (gone || api === undefined) throw new Error(`warden serve did not start:\n${[...stdout, ...logs].join('\n')}`);
  return {
    child,
    api,
    stdout,
    logs,
    exited,
    kill: (signal) => {
      if (!gone) child.kill(signal);
      return exited;
    },
  };
}

/** A Poseidon client of a serve at `api`. */
export class PoseidonClient {
  constructor(readonly api: string) {}

  async call(method: string, path: string, body?: unknown, raw?: string): Promise<Answer> {
    const text = raw ?? (body === undefined ? undefined : JSON.stringify(body));
    const response = await fetch(`${this.api}${path}`, { method, ...(text === undefined ? {} : { body: text, headers: { 'content-type': 'application/json' } }) });
    const answer = await response.text();
    const json = (response.headers.get('content-type') ?? '').startsWith('application/json') ? (JSON.parse(answer) as unknown) : undefined;
    return { status: response.status, headers: response.headers, text: answer, json };
  }

  async statistics(environmentId: number): Promise<{ idleRunners: number; usedRunners: number; prewarmingPoolSize: number } | undefined> {
    const answer = await this.call('GET', '/statistics/execution-environments');
    return (answer.json as Record<string, { idleRunners: number; usedRunners: number; prewarmingPoolSize: number }>)[String(environmentId)];
  }

  /** PUT an environment (Warden's defaults decide the driver) and wait until its pool is full. */
  async environment(id: number, poolSize: number, extra: Record<string, unknown> = {}, timeoutMs = 90_000): Promise<number> {
    const answer = await this.call('PUT', `/execution-environments/${id}`, { prewarmingPoolSize: poolSize, cpuLimit: 20, memoryLimit: 0, image: 'unused-without-docker', networkAccess: false, exposedPorts: [], ...extra });
    if (answer.status !== 201 && answer.status !== 204) throw new Error(`PUT environment ${id}: ${answer.status} ${answer.text}`);
    await this.fullPool(id, poolSize, timeoutMs);
    return answer.status;
  }

  fullPool(id: number, poolSize: number, timeoutMs = 90_000): Promise<void> {
    return until(`environment ${id} to have ${poolSize} idle runners`, async () => ((await this.statistics(id))?.idleRunners ?? 0) >= poolSize, timeoutMs, 200);
  }

  /** POST /runners once the pool has an idle runner: the runner's ID. */
  async runner(environmentId: number, inactivityTimeout = 0, timeoutMs = 90_000): Promise<string> {
    await until(`an idle runner of environment ${environmentId}`, async () => ((await this.statistics(environmentId))?.idleRunners ?? 0) > 0, timeoutMs, 200);
    const answer = await this.call('POST', '/runners', { executionEnvironmentId: environmentId, inactivityTimeout });
    if (answer.status !== 200) throw new Error(`POST /runners: ${answer.status} ${answer.text}`);
    return (answer.json as { runnerId: string }).runnerId;
  }

  copy(runnerId: string, files: Record<string, string>, remove: string[] = []): Promise<Answer> {
    return this.call('PATCH', `/runners/${runnerId}/files`, {
      copy: Object.entries(files).map(([path, content]) => ({ path, content: Buffer.from(content).toString('base64') })),
      delete: remove,
    });
  }

  async execute(runnerId: string, execution: Record<string, unknown>): Promise<string> {
    const answer = await this.call('POST', `/runners/${runnerId}/execute`, execution);
    if (answer.status !== 200) throw new Error(`execute: ${answer.status} ${answer.text}`);
    return (answer.json as { websocketUrl: string }).websocketUrl;
  }

  connect(url: string): Promise<Conversation> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      const messages: Message[] = [];
      const waiting: { type: string; resolve: (message: Message) => void }[] = [];
      ws.on('message', (data) => {
        const message = JSON.parse((data as Buffer).toString('utf8')) as Message;
        messages.push(message);
        for (const waiter of waiting.filter((w) => w.type === message.type)) {
          waiting.splice(waiting.indexOf(waiter), 1);
          waiter.resolve(message);
        }
      });
      const closed = new Promise<number>((done) => ws.on('close', (code) => done(code)));
      ws.once('open', () =>
        resolve({
          ws,
          messages,
          closed,
          next: (type) => {
            const found = messages.find((m) => m.type === type);
            return found ? Promise.resolve(found) : new Promise((done) => waiting.push({ type, resolve: done }));
          },
        }),
      );
      ws.once('unexpected-response', (_request, response) => reject(Object.assign(new Error(`upgrade refused: ${response.statusCode}`), { status: response.statusCode })));
      ws.once('error', reject);
    });
  }

  /** Execute, connect, and collect until the close. */
  async run(runnerId: string, execution: Record<string, unknown>): Promise<Ran> {
    const conversation = await this.connect(await this.execute(runnerId, execution));
    const close = await conversation.closed;
    return { ...output(conversation.messages), close };
  }
}

export function output(messages: readonly Message[]): Omit<Ran, 'close'> {
  const text = (type: string): string => messages.filter((m) => m.type === type).map((m) => String(m.data)).join('');
  return { stdout: text('stdout'), stderr: text('stderr'), control: messages.filter((m) => !['stdout', 'stderr'].includes(m.type)) };
}
