/**
 * Server side of bench/supervisor.ts, in its own process (as a real Nomad is): FakeNomad on its own
 * VirtualClock with the bench stream parsed up front. Prints its address; then for each stdin line
 * `<t>` publishes every batch due by stream time t and answers `<wall ms of the last publish>`.
 *
 *   node --import tsx bench/supervisor-server.ts <allocations> <batch>
 */
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { VirtualClock } from '../src/clock/index.js';
import { FakeNomad } from '../src/testing/fakeNomad.js';
import type { StreamEvent } from '../src/testing/nomad/eventBroker.js';
import { parseLossless } from '../src/testing/losslessJson.js';
import { benchStream } from './supervisor-input.js';

const stream = benchStream(Number(process.argv[2]), Number(process.argv[3]));
const batches = stream.lines.map((line) => {
  const { Index, Events } = parseLossless(line.raw) as unknown as { Index: number; Events: StreamEvent[] };
  return { t: line.t, batch: { Index, Events, raw: line.raw } };
});
const clock = new VirtualClock({ start: stream.start });
const fake = await FakeNomad.start({ clock, eventBufferSize: batches.length + 1 });
process.stdout.write(`${fake.address}\n`);
let next = 0;
createInterface({ input: process.stdin }).on('line', (text) => {
  const t = Number(text);
  clock.advanceTo(Math.max(clock.now(), stream.start + t));
  while (next < batches.length && batches[next]!.t <= t) fake.cluster.applyRecordedBatch(batches[next++]!.batch);
  process.stdout.write(`${performance.timeOrigin + performance.now()}\n`);
});
process.stdin.on('end', () => void fake.close().then(() => process.exit(0)));
