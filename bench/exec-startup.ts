/**
 * Startup of `warden exec <alloc> -- true`: the compiled bin (dist/, built first) run by plain node,
 * as an installed package runs, against FakeNomad on loopback, from process start to process exit.
 * Beside it, alternating in the same run, a bare `node -e` script doing the same work: the same two
 * lookups (allocations by prefix, then the allocation) over node:http and the same exec over a bare
 * ws client (stdin closed, exit code read). Both pay node's own start, measured alone too.
 *
 * Target: within 2× of `nomad alloc exec`'s 0.3 s for the same command (issue 11), i.e. 600 ms;
 * `ratio` = warden ÷ baseline medians.
 *
 *   npx tsx bench/exec-startup.ts [--runs 15]
 */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { FakeNomad } from '../src/testing/fakeNomad.js';
import { median, numberOption } from './support/figures.js';

const RUNS = numberOption('runs', 15);
const TARGET_MS = 2 * 300;
const ROOT = join(import.meta.dirname, '..');
const BIN = join(ROOT, 'dist', 'src', 'cli', 'bin.js');

/** The same work with nothing of Warden: two lookups, then the exec websocket until `exited`. */
const BASELINE = `
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

function timed(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const start = performance.now();
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'inherit'] });
  return new Promise((resolve, reject) =>
    child.on('close', (code) => (code === 0 ? resolve(performance.now() - start) : reject(new Error(`${command} ${args.join(' ')} exited ${code}`)))),
  );
}

async function main(): Promise<void> {
  const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  if (build.status !== 0) throw new Error('npm run build failed');

  const nomad = await FakeNomad.start({});
  nomad.cluster.registerJob({ ID: 'bench', Name: 'bench', Type: 'service', Datacenters: ['dc1'], TaskGroups: [{ Name: 'app', Count: 1, Tasks: [{ Name: 'main', Driver: 'raw_exec', Config: {} }] }] });
  const allocId = String(nomad.cluster.placeAllocations('bench')[0]?.ID);
  nomad.cluster.startTask(allocId);
  const env = { ...process.env, NOMAD_ADDR: nomad.address };
  const prefix = allocId.slice(0, 8);
  const ways = {
    warden: () => timed(process.execPath, [BIN, 'exec', prefix, '--', 'true'], env),
    baseline: () => timed(process.execPath, ['-e', BASELINE, prefix], env),
    node: () => timed(process.execPath, ['-e', '0'], env),
  };
  const times: Record<keyof typeof ways, number[]> = { warden: [], baseline: [], node: [] };
  // One of each to warm the file cache, then alternating so neither side always runs on a warmer machine.
  for (const way of Object.values(ways)) await way();
  for (let run = 0; run < RUNS; run++) {
    const order = (run % 2 === 0 ? ['warden', 'baseline', 'node'] : ['node', 'baseline', 'warden']) as (keyof typeof ways)[];
    for (const name of order) times[name].push(await ways[name]());
  }
  await nomad.close();

  const ms = (values: number[]): number => Math.round(median(values));
  console.log(
    JSON.stringify({
      runs: RUNS,
      warden_exec_median_ms: ms(times.warden),
      baseline_median_ms: ms(times.baseline),
      node_start_median_ms: ms(times.node),
      ratio: Math.round((median(times.warden) / median(times.baseline)) * 100) / 100,
      target_ms: TARGET_MS,
      within_target: median(times.warden) <= TARGET_MS,
      warden_ms: times.warden.map(Math.round),
      baseline_ms: times.baseline.map(Math.round),
    }),
  );
}

await main();
