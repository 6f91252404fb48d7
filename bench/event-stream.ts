/**
 * Event-stream throughput: the recorded many_allocs stream, repeated (with shifted raft indexes) to
 * at least 50 MB, served by FakeNomad over loopback and read through NomadClient's resumable
 * event stream into a counting subscriber; beside it, a bare JSON.parse of the same lines, in the
 * same run. FakeNomad runs in its own process (bench/event-stream-server.ts), as a real Nomad
 * does, so the figures are the client's work. Rounds alternate to spread the machine's noise;
 * the ratios are of medians.
 *
 * The floor is the same body over the same client cut into lines for bare JSON.parse, and nothing
 * else: turning bytes into strings, and parsing while the server process competes for the
 * memory bus, cost the stream time that the bare parse of strings already in memory never pays.
 *
 *   npx tsx bench/event-stream.ts [--mb 50] [--rounds 5]
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { NomadClient } from '../src/nomad/client.js';
import { nomadEventStream } from '../src/nomad/eventStream.js';
import { parseNomadJson } from '../src/nomad/json.js';
import { NdjsonDecoder } from '../src/nomad/ndjson.js';
import { benchLines } from './event-stream-input.js';
import { median, numberOption } from './support/figures.js';

const targetBytes = numberOption('mb', 50) * 1_000_000;
const rounds = numberOption('rounds', 5);

const { lines, bytes } = benchLines(targetBytes);
const events = lines.reduce((n, line) => n + (JSON.parse(line) as { Events: unknown[] }).Events.length, 0);
const lastIndex = (JSON.parse(lines.at(-1)!) as { Index: number }).Index;

const server = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'event-stream-server.ts'), String(targetBytes)], {
  stdio: ['pipe', 'pipe', 'inherit'],
});
const address = await new Promise<string>((resolve, reject) => {
  let text = '';
  server.stdout.on('data', (chunk: Buffer) => {
    text += chunk.toString();
    if (text.includes('\n')) resolve(text.trim());
  });
  server.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
});


interface Timing {
  /** Seconds from subscribing to the last event counted. */
  seconds: number;
  /** CPU seconds (user + system) this process spent meanwhile. */
  cpu: number;
}

/** Times `read` (which throws unless it got everything) on a fresh client. */
async function timeRead(read: (client: NomadClient) => Promise<void>): Promise<Timing> {
  const client = new NomadClient({ address });
  const cpu = process.cpuUsage();
  const start = performance.now();
  await read(client);
  const seconds = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  await client.close();
  return { seconds, cpu: (used.user + used.system) / 1e6 };
}

/** Times `parse` over every line, in memory. */
function timeParse(parse: (text: string) => unknown): Timing {
  const cpu = process.cpuUsage();
  const start = performance.now();
  for (const line of lines) parse(line);
  const used = process.cpuUsage(cpu);
  return { seconds: (performance.now() - start) / 1000, cpu: (used.user + used.system) / 1e6 };
}

/** Warden's event stream into a counting subscriber. */
async function streamEvents(client: NomadClient): Promise<void> {
  const stream = nomadEventStream(client, { topics: ['*'], index: 1 });
  let counted = 0;
  await new Promise<void>((resolve, reject) => {
    const subscription = stream.batches.subscribe({
      next: (batch) => {
        counted += batch.events.length;
        if (batch.index >= lastIndex) {
          subscription.unsubscribe();
          resolve();
        }
      },
      error: reject,
    });
  });
  if (counted !== events) throw new Error(`counted ${counted} events, expected ${events}`);
}

/**
 * The floor under any client of this stream, layer by layer, over the same HTTP client: the
 * response body's bytes; then cut into lines (strings); then each line given to bare JSON.parse.
 * No exact timestamps, no resume, no RxJS.
 */
const floorLayers = ['body', 'lines', 'parse'] as const;
type FloorLayer = (typeof floorLayers)[number];

function readTo(layer: FloorLayer): (client: NomadClient) => Promise<void> {
  return async (client) => {
    const response = await client.openEventStream({ topics: ['*'], index: 1 });
    const decoder = new NdjsonDecoder();
    let received = 0;
    let dataLines = 0;
    let counted = 0;
    for await (const chunk of response.body) {
      received += chunk.length;
      if (layer === 'body') {
        if (received >= bytes) return;
        continue;
      }
      for (const line of decoder.push(chunk)) {
        if (line === '{}') continue;
        if (layer === 'parse') counted += (JSON.parse(line) as { Events: unknown[] }).Events.length;
        if (++dataLines < lines.length) continue;
        if (layer === 'parse' && counted !== events) throw new Error(`counted ${counted} events, expected ${events}`);
        return;
      }
    }
    throw new Error('event stream ended early');
  };
}

const bare: Timing[] = [];
const exact: Timing[] = [];
const streamed: Timing[] = [];
const floor: Record<FloorLayer, Timing[]> = { body: [], lines: [], parse: [] };
await timeRead(streamEvents); // warm-up: JIT, connection set-up
for (const layer of floorLayers) await timeRead(readTo(layer));
for (let round = 0; round < rounds; round++) {
  bare.push(timeParse(JSON.parse));
  streamed.push(await timeRead(streamEvents));
  for (const layer of floorLayers) floor[layer].push(await timeRead(readTo(layer)));
  exact.push(timeParse(parseNomadJson));
}
server.stdin.end();
await new Promise((resolve) => server.once('exit', resolve));

const mb = bytes / 1_000_000;
const round1 = (x: number): number => Math.round(x * 10) / 10;
const round2 = (x: number): number => Math.round(x * 100) / 100;
const figures = (seconds: number[]) => ({ mbPerSecond: round1(mb / median(seconds)), eventsPerSecond: Math.round(events / median(seconds)) });
const wall = (timings: Timing[]): number[] => timings.map((t) => t.seconds);
const cpu = (timings: Timing[]): number[] => timings.map((t) => t.cpu);
console.log(
  JSON.stringify({
    bench: 'event-stream',
    input: { scenario: 'many_allocs', megabytes: round1(mb), lines: lines.length, events, rounds },
    bareJsonParse: figures(wall(bare)),
    parseNomadJson: figures(wall(exact)),
    eventStream: figures(wall(streamed)),
    /** The client's own CPU time while streaming: the rate if reading were never left waiting for the server. */
    eventStreamCpu: figures(cpu(streamed)),
    /** Body → lines → bare JSON.parse over the same connection: what no client of this stream can beat. */
    floor: figures(wall(floor.parse)),
    /** The floor's CPU time, layer by layer: each includes the ones before it. */
    floorCpu: { body: figures(cpu(floor.body)), lines: figures(cpu(floor.lines)), parse: figures(cpu(floor.parse)) },
    /** Wall against wall; CPU against the bare parse's own CPU time (less moved by other load). */
    ratio: {
      eventStreamVsBareParse: round2(median(wall(bare)) / median(wall(streamed))),
      eventStreamCpuVsBareParseCpu: round2(median(cpu(bare)) / median(cpu(streamed))),
      exactParseVsBareParse: round2(median(wall(bare)) / median(wall(exact))),
      floorCpuVsBareParseCpu: round2(median(cpu(bare)) / median(cpu(floor.parse))),
      eventStreamCpuVsFloorCpu: round2(median(cpu(floor.parse)) / median(cpu(streamed))),
      target: 0.7,
    },
    seconds: {
      bare: wall(bare),
      bareCpu: cpu(bare),
      streamed: wall(streamed),
      streamCpu: cpu(streamed),
      floor: wall(floor.parse),
      floorCpu: { body: cpu(floor.body), lines: cpu(floor.lines), parse: cpu(floor.parse) },
      exact: wall(exact),
    },
  }),
);
