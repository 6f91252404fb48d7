/**
 * Server side of bench/event-stream.ts, run as its own process (as a real Nomad is): FakeNomad
 * loaded with the bench lines; prints its address, serves until stdin closes.
 *
 *   node --import tsx bench/event-stream-server.ts <bytes>
 */
import { FakeNomad } from '../src/testing/fakeNomad.js';
import { benchLines } from './event-stream-input.js';

const { lines } = benchLines(Number(process.argv[2]));
const fake = await FakeNomad.start({ eventBufferSize: lines.length + 1 });
fake.replay(
  lines.map((raw, t) => ({ t, raw })),
  { immediate: true },
);
process.stdout.write(`${fake.address}\n`);
process.stdin.resume();
process.stdin.on('end', () => void fake.close().then(() => process.exit(0)));
