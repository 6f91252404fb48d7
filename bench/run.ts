/**
 * Runs every benchmark (or those named) one after another, each in its own process so none
 * inherits another's heap, and prints one JSON object: { <name>: <that benchmark's JSON> }.
 *
 *   npm run bench [-- health-machine event-stream exec startup supervisor supervisor-judging pools soak serve]
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const BENCHMARKS = ['health-machine', 'event-stream', 'exec', 'startup', 'supervisor', 'supervisor-judging', 'pools', 'soak', 'serve'] as const;
const here = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !(BENCHMARKS as readonly string[]).includes(name));
if (unknown.length > 0) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; known: ${BENCHMARKS.join(', ')}`);
  process.exit(2);
}

const results: Record<string, unknown> = {};
for (const name of wanted.length > 0 ? wanted : BENCHMARKS) {
  console.error(`running bench/${name}.ts …`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(here, `${name}.ts`)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 1024 * 1024 });
  if (run.status !== 0) {
    results[name] = { error: `exited with ${run.status ?? run.signal}` };
    continue;
  }
  try {
    results[name] = JSON.parse(run.stdout);
  } catch {
    results[name] = { error: 'did not print one JSON object', output: run.stdout.slice(0, 2000) };
  }
}
console.log(JSON.stringify(results, null, 2));
