import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { VirtualClock, settle } from '../../src/clock/index.js';
import { ExecClient } from '../../src/exec/execClient.js';
import type { ExecSession } from '../../src/exec/sessions.js';
import type { FakeExec } from '../../src/testing/fakeExec/attachFakeExec.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';

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

/** The fixtures' exec target (exec-target.hcl) as an API job. */
export const EXEC_TARGET_JOB = {
  ID: 'exec-target',
  Name: 'exec-target',
  Type: 'service',
  Datacenters: ['dc1'],
  TaskGroups: [
    {
      Name: 'app',
      Count: 1,
      Tasks: [
        {
          Name: 'main',
          Driver: 'raw_exec',
          Config: { command: '/bin/sh', args: ['-c', 'echo exec target up; exec sleep 3600'] },
          Resources: { CPU: 20, MemoryMB: 16 },
        },
      ],
    },
  ],
};

export interface Harness {
  clock: VirtualClock;
  nomad: FakeNomad;
  /** The exec endpoint attached to the FakeNomad. */
  fake: FakeExec;
  address: string;
  client: ExecClient;
  /** The exec-target allocation placed in the FakeNomad. */
  allocId: string;
  /** The allocation a recorded case runs against: ours, except for the case about an unknown one. */
  allocOf(name: string): string;
  close(): Promise<void>;
}

/** FakeNomad with the exec endpoint attached, the exec-target job registered and its allocation placed and running. */
export async function startHarness(): Promise<Harness> {
  const clock = new VirtualClock();
  const workdir = mkdtempSync(join(tmpdir(), 'warden-exec-'));
  const nomad = await FakeNomad.start({ clock, exec: { root: workdir } });
  const fake = nomad.exec as FakeExec;
  nomad.cluster.registerJob(EXEC_TARGET_JOB);
  const [allocation] = nomad.cluster.placeAllocations(EXEC_TARGET_JOB.ID);
  const allocId = String(allocation?.ID);
  // Nomad execs only into a task that runs.
  nomad.cluster.startTask(allocId);
  const unknown = /allocation\/([^/]+)\/exec/.exec(index.cases.g_unknown_alloc?.url ?? '')?.[1] ?? 'unknown';
  return {
    clock,
    nomad,
    fake,
    address: nomad.address,
    client: new ExecClient({ address: nomad.address }, { clock }),
    allocId,
    allocOf: (name) => (name === 'g_unknown_alloc' ? unknown : allocId),
    close: async () => {
      await nomad.close();
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

/**
 * A process's state letter and process group, read once from /proc (it can be reaped between two
 * reads); undefined once it is gone: ENOENT, or ESRCH while the kernel is reaping it.
 */
function procStat(pid: number | string): { state: string; pgrp: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command: state, ppid, pgrp, ...
    const [state = '', , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state, pgrp: Number(pgrp) };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ESRCH') return undefined;
    throw error;
  }
}

/** Live: neither reaped nor a zombie. */
export function isLive(pid: number): boolean {
  const stat = procStat(pid);
  return stat !== undefined && stat.state !== 'Z';
}

/** Live processes in a process group. */
function liveInGroup(pgid: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      const stat = procStat(entry);
      return stat !== undefined && stat.pgrp === pgid && stat.state !== 'Z';
    })
    .map(Number);
}

/**
 * Processes of the group that are still alive once the kernel has had time to deliver the kill: a
 * signalled process leaves /proc asynchronously, so this looks again for a bounded number of event-loop
 * turns (no wall-clock sleep) before answering.
 */
export async function survivorsInGroup(pgid: number, turns = 2_000): Promise<number[]> {
  let live = liveInGroup(pgid);
  for (let turn = 0; turn < turns && live.length > 0; turn++) {
    await settle(10);
    live = liveInGroup(pgid);
  }
  return live;
}

/** Resolves once the session's websocket is open (at once if it is already). */
export function opened(session: ExecSession): Promise<void> {
  const open = (snapshot: ReturnType<ExecSession['actor']['getSnapshot']>): boolean => snapshot.matches({ running: { phase: 'open' } });
  if (open(session.actor.getSnapshot())) return Promise.resolve();
  return new Promise((resolve) => session.actor.subscribe((snapshot) => open(snapshot) && resolve()));
}
