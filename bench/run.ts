/**
 * Runs every benchmark (or those named) one after another, each in its own process so none
 * inherits another's heap, and prints one JSON object: { <name>: <that benchmark's JSON> }. Exits
 * with 1 when any of them failed (its entry then says how).
 *
 * `--smoke` runs each at its smallest (SMOKE below): the figures mean nothing, what it shows is that
 * every benchmark still runs to its end. CI does that (.ci/run), so a benchmark broken by a change
 * elsewhere fails there instead of in the next person's measurement.
 *
 *   npm run bench [-- [--smoke] health-machine event-stream exec startup supervisor supervisor-judging pools soak serve]
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const SMOKE: Record<string, readonly string[]> = {
  'health-machine': ['--allocations', '2000'],
  'event-stream': ['--mb', '2', '--rounds', '1'],
  exec: ['--mb', '5', '--runs', '1', '--ttfb-runs', '3'],
  startup: ['--runs', '2'],
  supervisor: ['--allocations', '1000', '--rounds', '1', '--samples', '100', '--warmup', '200', '--warm-passes', '1'],
  'supervisor-judging': ['--allocations', '500', '--rounds', '1', '--warm-rounds', '0'],
  pools: ['--seconds', '2', '--warmup', '1', '--pool', '20'],
  soak: ['--warmup', '500', '--jobs', '1500', '--history', '200'],
  serve: ['--pairs', '40', '--claims', '40', '--seconds', '1', '--latency-pool', '10'],
};
const BENCHMARKS = Object.keys(SMOKE);
const here = dirname(fileURLToPath(import.meta.url));
const smoke = process.argv.includes('--smoke');
const wanted = process.argv.slice(2).filter((arg) => arg !== '--smoke');
const unknown = wanted.filter((name) => !BENCHMARKS.includes(name));
if (unknown.length > 0) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; known: ${BENCHMARKS.join(', ')}`);
  process.exit(2);
}

const results: Record<string, unknown> = {};
let failed = 0;
for (const name of wanted.length > 0 ? wanted : BENCHMARKS) {
  console.error(`running bench/${name}.ts${smoke ? ' (smoke)' : ''} …`);
  const options = smoke ? (SMOKE[name] ?? []) : [];
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(here, `${name}.ts`), ...options], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 1024 * 1024 });
  if (run.status !== 0) {
    failed++;
    results[name] = { error: `exited with ${run.status ?? run.signal}` };
    continue;
  }
  try {
    results[name] = JSON.parse(run.stdout);
  } catch {
    failed++;
    results[name] = { error: 'did not print one JSON object', output: run.stdout.slice(0, 2000) };
  }
}
console.log(JSON.stringify(results, null, 2));
if (failed > 0) {
  console.error(`${failed} benchmark(s) failed`);
  process.exitCode = 1;
}
