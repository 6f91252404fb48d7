/**
 * Event-stream throughput: the recorded many_allocs stream, repeated (with shifted raft indexes) to
 * at least 50 MB, served by FakeNomad over loopback and read through NomadClient's resumable
 * event stream into a counting subscriber; beside it, a bare JSON.parse of the same lines, in the
 * same run. FakeNomad runs in its own process (bench/event-stream-server.ts), as a real Nomad
 * does, so the figures are the client's work. Rounds alternate to spread the machine's noise;
 * the ratios are of medians.
 *
 *   npx tsx bench/event-stream.ts [--mb 50] [--rounds 5]
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { NomadClient } from '../src/nomad/client.js';
import { nomadEventStream } from '../src/nomad/eventStream.js';
import { parseNomadJson } from '../src/nomad/json.js';
import { benchLines } from './event-stream-input.js';

const args = process.argv.slice(2);
const option = (name: string, fallback: number): number => {
  const at = args.indexOf(`--${name}`);
  return at === -1 ? fallback : Number(args[at + 1]);
};
const targetBytes = option('mb', 50) * 1_000_000;
const rounds = option('rounds', 5);

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

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function timeParse(parse: (text: string) => unknown): number {
  const start = performance.now();
  for (const line of lines) parse(line);
  return (performance.now() - start) / 1000;
}

/** CPU seconds (user + system) this process spent in the last timeStream. */
let lastStreamCpu = 0;

/** Seconds from subscribing to the last event counted. */
async function timeStream(): Promise<number> {
  const client = new NomadClient({ address });
  const stream = nomadEventStream(client, { topics: ['*'], index: 1 });
  let counted = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
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
  const seconds = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  lastStreamCpu = (used.user + used.system) / 1e6;
  await client.close();
  if (counted !== events) throw new Error(`counted ${counted} events, expected ${events}`);
  return seconds;
}

const bare: number[] = [];
const exact: number[] = [];
const streamed: number[] = [];
const streamCpu: number[] = [];
await timeStream(); // warm-up: JIT, connection set-up
for (let round = 0; round < rounds; round++) {
  bare.push(timeParse(JSON.parse));
  streamed.push(await timeStream());
  streamCpu.push(lastStreamCpu);
  exact.push(timeParse(parseNomadJson));
}
server.stdin.end();
await new Promise((resolve) => server.once('exit', resolve));

const mb = bytes / 1_000_000;
const round1 = (x: number): number => Math.round(x * 10) / 10;
const figures = (seconds: number[]) => ({ mbPerSecond: round1(mb / median(seconds)), eventsPerSecond: Math.round(events / median(seconds)) });
console.log(
  JSON.stringify({
    bench: 'event-stream',
    input: { scenario: 'many_allocs', megabytes: round1(mb), lines: lines.length, events, rounds },
    bareJsonParse: figures(bare),
    parseNomadJson: figures(exact),
    eventStream: figures(streamed),
    /** The client's own CPU time while streaming: the rate if reading were never left waiting for the server. */
    eventStreamCpu: figures(streamCpu),
    ratio: {
      eventStreamVsBareParse: Math.round((median(bare) / median(streamed)) * 100) / 100,
      eventStreamCpuVsBareParse: Math.round((median(bare) / median(streamCpu)) * 100) / 100,
      exactParseVsBareParse: Math.round((median(bare) / median(exact)) * 100) / 100,
      target: 0.7,
    },
    seconds: { bare, streamed, streamCpu, exact },
  }),
);
