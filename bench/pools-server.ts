/**
 * Server side of bench/pools.ts's churn and bench/serve.ts, in its own process (as a real Nomad is):
 * a FakeNomad that acts as a cluster on the system clock, placing and starting allocations at once,
 * collecting what purged jobs leave after a second; with `--exec`, exec sessions run real processes
 * (runner executions). Prints its address; answers each `cpu` line on stdin with the CPU time it
 * has used (ms); ends when stdin ends.
 *
 *   node --import tsx bench/pools-server.ts [--exec]
 */
import { tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
import { systemClock } from '../src/clock/index.js';
import { FakeNomad } from '../src/testing/fakeNomad.js';
import { cpuMs } from './support/figures.js';

const fake = await FakeNomad.start({
  clock: systemClock,
  // A HOME of its own: the runners' shells do not read this machine's start-up files.
  exec: process.argv.includes('--exec') ? { env: { HOME: tmpdir() } } : false,
  eventBufferSize: 1_000,
  acting: { scheduleDelayMs: 1, receiveDelayMs: 1, startDelayMs: 1, stopDelayMs: 1, gcAfterMs: 1_000 },
});
process.stdout.write(`${fake.address}\n`);
const commands = createInterface({ input: process.stdin });
commands.on('line', (line) => {
  if (line !== 'cpu') return;
  process.stdout.write(`${cpuMs()}\n`);
});
commands.on('close', () => void fake.close().then(() => process.exit(0)));
