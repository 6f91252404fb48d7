/**
 * Start-up of the installed `warden` command: the packed tarball installed into a fresh project
 * (test/cli/support/packedWarden.ts), its bin run as a user runs it, from process start to exit.
 * Every command runs in turn with the others, round after round, so a drift of the machine's speed
 * moves them all; figures are medians of wall time and (with GNU time) CPU time, each with its ratio
 * to a bare `node -e 0` of the same run and what it adds to node's own start.
 *
 *   version     `warden --version`                        target ≤ 150 ms (issue 20)
 *   help        `warden --help`
 *   exec        `warden exec <alloc> -- true` on a FakeNomad of this process, beside a bare node
 *               script doing the same work (the two lookups over node:http, the exec over ws): the
 *               floor for a Node command
 *   live exec   `warden exec <alloc> -- true` beside `nomad alloc exec <alloc> true` on a real
 *               Nomad: target ≤ 3× Nomad's (issue 20). A dev agent of its own (NOMAD_BIN or nomad on
 *               PATH; free loopback ports, removed after), or the cluster at NOMAD_ADDR with
 *               --alloc <id>; skipped, and said so, when there is neither.
 *   unbundled   the same package's tsc output (dist/src/cli/bin.js) run by node: what the bundle
 *               (scripts/bundleCli.ts) buys
 *
 * `modules` counts the JavaScript files node compiles for each (ESM and CommonJS alike).
 *
 *   npm run bench -- startup            (or npx tsx bench/startup.ts [--runs 15] [--alloc <id>])
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { NomadClient } from '../src/nomad/client.js';
import type { Job } from '../src/nomad/types.js';
import { FakeNomad } from '../src/testing/fakeNomad.js';
import { findBinary, startNomad, type Agent } from '../test/live/support/agents.js';
import { packedWarden } from '../test/cli/support/packedWarden.js';
import { median, numberOption, round } from './support/figures.js';

const RUNS = numberOption('runs', 15);
const VERSION_TARGET_MS = 150;
const LIVE_EXEC_TARGET_RATIO = 3;

/** The exec's work with nothing of Warden: the two lookups, then the websocket until `exited`. */
const BARE_EXEC = `
const http = require('node:http');
const WebSocket = require('ws');
const address = new URL(process.env.NOMAD_ADDR);
const get = (path) => new Promise((resolve, reject) =>
  http.get({ host: address.hostname, port: address.port, path }, (response) => {
    let body = '';
    response.on('data', (chunk) => (body += chunk)).on('end', () => resolve(JSON.parse(body)));
  }).on('error', reject));
(async () => {
  const [stub] = await get('/v1/allocations?prefix=' + process.argv[1]);
  const allocation = await get('/v1/allocation/' + stub.ID);
  const task = allocation.Job.TaskGroups.find((group) => group.Name === allocation.TaskGroup).Tasks[0].Name;
  const query = new URLSearchParams({ task, command: JSON.stringify(['true']), tty: 'false' });
  const ws = new WebSocket('ws://' + address.host + '/v1/client/allocation/' + stub.ID + '/exec?' + query, { perMessageDeflate: false });
  ws.on('open', () => ws.send('{"stdin":{"close":true}}'));
  ws.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.exited) { process.exitCode = frame.result.exit_code ?? 0; ws.close(1000); }
  });
})();
`;

/** A load hook that notes every file node loads as ESM (WARDEN_BENCH_MODULES names the list). */
const ESM_HOOK = `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  if (url.startsWith('file:')) appendFileSync(process.env.WARDEN_BENCH_MODULES, url + '\\n');
  return next(url, context);
}
`;

/** Preloaded (--import): the hook above, and the same note for every CommonJS file compiled. */
const COUNTER = `import { Module, register } from 'node:module';
import { appendFileSync } from 'node:fs';
register('./esmHook.mjs', import.meta.url);
const compile = Module.prototype._compile;
Module.prototype._compile = function (content, filename) {
  appendFileSync(process.env.WARDEN_BENCH_MODULES, 'file://' + filename + '\\n');
  return compile.call(this, content, filename);
};
`;

interface Case {
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
}

/**
 * GNU time, when the machine has it: the child's CPU time (user + system) beside the wall time. On a
 * loaded machine the wall time mostly measures the wait for a core; the CPU time, what the command costs.
 */
const GNU_TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;

interface Timing {
  wallMs: number;
  cpuMs?: number;
}

function run(way: Case, extraEnv: NodeJS.ProcessEnv = {}, scratch?: string): Promise<Timing> {
  const cpuFile = GNU_TIME !== undefined && scratch !== undefined ? join(scratch, 'cpu') : undefined;
  const [command, args] = cpuFile === undefined ? [way.command, way.args] : [GNU_TIME!, ['-f', '%U %S', '-o', cpuFile, way.command, ...way.args]];
  const start = performance.now();
  const child = spawn(command, args, { env: { ...process.env, ...way.env, ...extraEnv }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.on('close', (code) => {
      const wallMs = performance.now() - start;
      if (code !== 0) return reject(new Error(`${way.command} ${way.args.join(' ')} exited ${code}: ${stderr.slice(-2000)}`));
      if (cpuFile === undefined) return resolve({ wallMs });
      const [user, system] = readFileSync(cpuFile, 'utf8').trim().split(/\s+/).map(Number);
      resolve({ wallMs, cpuMs: ((user ?? 0) + (system ?? 0)) * 1000 });
    }),
  );
}

/** The files node compiles for one run of `way` (a node command; the bin's shebang runs node too). */
async function modulesOf(name: string, way: Case, dir: string): Promise<number> {
  const log = join(dir, `${name}.log`);
  writeFileSync(log, '');
  await run(way, { NODE_OPTIONS: `--import ${join(dir, 'counter.mjs')}`, WARDEN_BENCH_MODULES: log });
  return new Set(readFileSync(log, 'utf8').split('\n').filter(Boolean)).size;
}

/** A raw_exec job whose one task sleeps, running, on a real Nomad; its allocation id. */
async function sleepingAllocation(nomad: NomadClient, jobId: string): Promise<string> {
  const job: Job = {
    ID: jobId,
    Name: jobId,
    Type: 'batch',
    Datacenters: ['dc1'],
    TaskGroups: [{ Name: 'app', Count: 1, RestartPolicy: { Attempts: 0, Mode: 'fail' }, Tasks: [{ Name: 'main', Driver: 'raw_exec', Config: { command: '/bin/sleep', args: ['3600'] } }] }],
  } as Job;
  await nomad.registerJob(job);
  let index = 0;
  for (let waited = 0; waited < 60; waited++) {
    const { body, meta } = await nomad.jobAllocations(jobId, { index, waitMs: 5_000 });
    index = meta.lastIndex;
    const running = body.find((stub) => stub.ClientStatus === 'running');
    if (running) return running.ID;
    const failed = body.find((stub) => stub.ClientStatus === 'failed');
    if (failed) throw new Error(`the bench's job ${jobId} failed to start`);
  }
  throw new Error(`the bench's job ${jobId} was not running within 5 minutes`);
}

interface Live {
  env: NodeJS.ProcessEnv;
  alloc: string;
  nomadBinary: string;
  close(): Promise<void>;
}

/** Nomad for the live comparison: NOMAD_ADDR with --alloc, else a dev agent of our own; undefined (and why) when neither. */
async function liveNomad(): Promise<Live | string> {
  const args = process.argv.slice(2);
  const alloc = args.includes('--alloc') ? args[args.indexOf('--alloc') + 1] : undefined;
  let nomadBinary: string;
  try {
    nomadBinary = findBinary('nomad', 'NOMAD_BIN');
  } catch (error) {
    return (error as Error).message;
  }
  if (process.env.NOMAD_ADDR !== undefined && alloc !== undefined) return { env: {}, alloc, nomadBinary, close: async () => undefined };
  let agent: Agent;
  try {
    agent = await startNomad({ binary: nomadBinary });
  } catch (error) {
    return `no dev agent: ${(error as Error).message}`;
  }
  const client = new NomadClient({ address: agent.address });
  const jobId = 'warden-bench-startup';
  try {
    return {
      env: { NOMAD_ADDR: agent.address },
      alloc: await sleepingAllocation(client, jobId),
      nomadBinary,
      close: async () => {
        await client.deregisterJob(jobId, { purge: true }).catch(() => undefined);
        await client.close();
        await agent.stop();
      },
    };
  } catch (error) {
    await client.close();
    await agent.stop();
    return `no allocation on the dev agent: ${(error as Error).message}`;
  }
}

async function main(): Promise<void> {
  const warden = await packedWarden();
  const unbundled = join(warden.packageDir, 'dist', 'src', 'cli', 'bin.js');
  const fake = await FakeNomad.start({});
  fake.cluster.registerJob({ ID: 'bench', Name: 'bench', Type: 'service', Datacenters: ['dc1'], TaskGroups: [{ Name: 'app', Count: 1, Tasks: [{ Name: 'main', Driver: 'raw_exec', Config: {} }] }] });
  const placed = String(fake.cluster.placeAllocations('bench')[0]?.ID);
  // Nomad execs only into a task that runs.
  fake.cluster.startTask(placed);
  const fakeAlloc = placed.slice(0, 8);
  const fakeEnv = { NOMAD_ADDR: fake.address };
  const live = await liveNomad();

  const cases: Record<string, Case> = {
    node: { command: process.execPath, args: ['-e', '0'] },
    version: { command: warden.bin, args: ['--version'] },
    help: { command: warden.bin, args: ['--help'] },
    exec: { command: warden.bin, args: ['exec', fakeAlloc, '--', 'true'], env: fakeEnv },
    bareExec: { command: process.execPath, args: ['-e', BARE_EXEC, fakeAlloc], env: { ...fakeEnv, NODE_PATH: join(warden.project, 'node_modules') } },
    unbundledVersion: { command: process.execPath, args: [unbundled, '--version'] },
    unbundledExec: { command: process.execPath, args: [unbundled, 'exec', fakeAlloc, '--', 'true'], env: fakeEnv },
  };
  if (typeof live !== 'string') {
    cases.liveExec = { command: warden.bin, args: ['exec', live.alloc, '--', 'true'], env: live.env };
    cases.nomadExec = { command: live.nomadBinary, args: ['alloc', 'exec', live.alloc, 'true'], env: live.env };
  }
  const names = Object.keys(cases);
  const times = Object.fromEntries(names.map((name) => [name, [] as Timing[]]));
  const modules: Record<string, number> = {};
  const scratch = mkdtempSync(join(tmpdir(), 'warden-bench-startup-'));
  writeFileSync(join(scratch, 'esmHook.mjs'), ESM_HOOK);
  writeFileSync(join(scratch, 'counter.mjs'), COUNTER);
  try {
    for (const name of names) if (name !== 'nomadExec') modules[name] = await modulesOf(name, cases[name]!, scratch);
    // One of each warms the file cache; then every round runs them all, in an order that turns.
    for (const name of names) await run(cases[name]!);
    for (let round_ = 0; round_ < RUNS; round_++) {
      for (let i = 0; i < names.length; i++) {
        const name = names[(i + round_) % names.length]!;
        times[name]!.push(await run(cases[name]!, {}, scratch));
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    await fake.close();
    if (typeof live !== 'string') await live.close();
  }

  const wall = (name: string): number => median(times[name]!.map((timing) => timing.wallMs));
  const cpu = (name: string): number | undefined => (GNU_TIME === undefined ? undefined : median(times[name]!.map((timing) => timing.cpuMs ?? 0)));
  const ratio = (name: string, to: string): { wall: number; cpu?: number } => {
    const [a, b] = [cpu(name), cpu(to)];
    return { wall: round(wall(name) / wall(to)), ...(a === undefined || b === undefined ? {} : { cpu: round(a / b) }) };
  };
  const figures = Object.fromEntries(
    names.map((name) => {
      const cpuMs = cpu(name);
      return [
        name,
        {
          wallMs: Math.round(wall(name)),
          minWallMs: Math.round(Math.min(...times[name]!.map((timing) => timing.wallMs))),
          ...(cpuMs === undefined ? {} : { cpuMs: Math.round(cpuMs) }),
          // Its cost beyond starting node at all.
          addedWallMs: Math.round(wall(name) - wall('node')),
          xNode: ratio(name, 'node'),
          ...(modules[name] === undefined ? {} : { modules: modules[name] }),
        },
      ];
    }),
  );
  const liveRatio = typeof live === 'string' ? undefined : ratio('liveExec', 'nomadExec');
  console.log(
    JSON.stringify(
      {
        runs: RUNS,
        figures,
        targets: {
          version: { targetMs: VERSION_TARGET_MS, wallMs: Math.round(wall('version')), met: wall('version') <= VERSION_TARGET_MS },
          liveExec: liveRatio === undefined ? { skipped: live } : { targetXNomad: LIVE_EXEC_TARGET_RATIO, xNomad: liveRatio, met: liveRatio.wall <= LIVE_EXEC_TARGET_RATIO },
        },
        execXBareNode: ratio('exec', 'bareExec'),
        bundleSpeedup: { version: ratio('unbundledVersion', 'version'), exec: ratio('unbundledExec', 'exec') },
      },
      null,
      2,
    ),
  );
}

await main();
