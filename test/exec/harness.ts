import { createServer, type RequestListener, type Server } from 'node:http';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import { VirtualClock, settle } from '../../src/clock/index.js';
import { ExecClient } from '../../src/exec/execClient.js';
import { attachFakeExec, type FakeExec } from '../../src/testing/fakeExec/attachFakeExec.js';

export const EXEC_FIXTURES = join(__dirname, '..', 'fixtures', 'nomad-1.1.2', 'exec');

export interface TranscriptCase {
  url: string;
  query: { task: string; tty: boolean; command: string[] };
  close: { code: number; reason: string };
  exit_code: number | null;
  decoded_stdout: string;
  decoded_stderr: string;
}

export const index = JSON.parse(readFileSync(join(EXEC_FIXTURES, 'index.json'), 'utf8')) as {
  alloc_id: string;
  cases: Record<string, TranscriptCase>;
};

/** The allocation id a case was recorded against (j1 used a second allocation). */
export function allocOf(name: string): string {
  const url = index.cases[name]?.url ?? '';
  return /allocation\/([^/]+)\/exec/.exec(url)?.[1] ?? index.alloc_id;
}

export interface Harness {
  clock: VirtualClock;
  server: Server;
  fake: FakeExec;
  address: string;
  client: ExecClient;
  workdir: string;
  close(): Promise<void>;
}

/** A plain http server on loopback with the fake exec endpoint; the fixtures' allocations have task `main`. */
export async function startHarness(
  allocIds: readonly string[] = [index.alloc_id, allocOf('j1_tty_stdin_close_is_not_eof')],
  handler: RequestListener = (_request, response) => response.writeHead(404).end(),
): Promise<Harness> {
  const clock = new VirtualClock();
  const workdir = mkdtempSync(join(tmpdir(), 'warden-exec-'));
  const server = createServer(handler);
  const fake = attachFakeExec(server, {
    clock,
    lookup: (allocId) => (allocIds.includes(allocId) ? { tasks: ['main'], workdir: join(workdir, allocId) } : undefined),
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = new ExecClient({ address }, { clock });
  return {
    clock,
    server,
    fake,
    address,
    client,
    workdir,
    close: async () => {
      await fake.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      rmSync(workdir, { recursive: true, force: true });
    },
  };
}

/** Everything a stream yields, as one Buffer. */
export async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Keeps everything a stream yields as text; `waitFor` resolves once some text has appeared. */
export class Recorder {
  text = '';
  readonly ended: Promise<void>;
  #waiters: [string, () => void][] = [];

  constructor(stream: Readable) {
    stream.on('data', (chunk: Buffer) => {
      this.text += chunk.toString();
      this.#waiters = this.#waiters.filter(([wanted, resolve]) => !(this.text.includes(wanted) && (resolve(), true)));
    });
    this.ended = new Promise((resolve) => stream.on('end', resolve));
  }

  waitFor(wanted: string): Promise<void> {
    if (this.text.includes(wanted)) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push([wanted, resolve]));
  }
}

/** Lets real I/O run until `condition` holds, without moving virtual time. */
export async function until(condition: () => boolean, turns = 20_000): Promise<void> {
  for (let i = 0; i < turns && !condition(); i++) await settle();
  if (!condition()) throw new Error('condition not reached');
}

/** Live (not zombie) processes in a process group, read from /proc. */
export function liveInGroup(pgid: number): number[] {
  const live: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Fields after the parenthesised command: state, ppid, pgrp, ...
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z') live.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return live;
}
