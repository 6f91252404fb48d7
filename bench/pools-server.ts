/**
 * Server side of bench/pools.ts's churn, in its own process (as a real Nomad is): a FakeNomad that
 * acts as a cluster on the system clock, placing and starting allocations at once, collecting what
 * purged jobs leave after a second. Prints its address; ends when stdin ends.
 *
 *   node --import tsx bench/pools-server.ts
 */
import { systemClock } from '../src/clock/index.js';
import { FakeNomad } from '../src/testing/fakeNomad.js';

const fake = await FakeNomad.start({
  clock: systemClock,
  exec: false,
  eventBufferSize: 1_000,
  acting: { scheduleDelayMs: 1, receiveDelayMs: 1, startDelayMs: 1, stopDelayMs: 1, gcAfterMs: 1_000 },
});
process.stdout.write(`${fake.address}\n`);
process.stdin.resume();
process.stdin.on('end', () => void fake.close().then(() => process.exit(0)));
