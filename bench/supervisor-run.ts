/**
 * One measured run of bench/supervisor.ts, in a fresh process, against its server
 * (bench/supervisor-server.ts). Prints one JSON object.
 *
 * - `floor-throughput` / `warden-throughput`: the whole stream (placed, running, failing), from the
 *   server's first byte to the last line parsed (floor) or the last verdict (Warden): wall and CPU,
 *   of the process's first pass (cold) and of a pass after the warm passes;
 * - `floor-cluster` / `warden-cluster`: the same, for the stream shaped like a busy cluster.
 * - `latency`: every allocation placed and running under Warden (heap per supervised allocation,
 *   after two full collections), then single-allocation failures, one at a time, each line to three
 *   readers in turn in the same process: from the server writing the line to the line parsed (the
 *   floor), to the line decoded by Warden's own decoder in the floor's reader (decodeFrame: exact
 *   timestamps, event checks; how much of Warden's latency is decoding), to its verdict (Warden).
 * - `timers-healthy` / `timers-deadline`: the timer benchmark (see bench/supervisor.ts).
 *
 * Every run first goes `warm passes` times through a small stream (2,000 allocations) with a
 * supervisor (or floor reader) of its own that it then drops, so that the JIT has compiled what the
 * measured run runs, as in a supervisor that has been up for a while. One pass is not enough: the
 * CPU time of each pass keeps falling until about the fifth, in both readers (measured, ms per pass:
 * Warden 474, 224, 152, 125, 114, then 110–125; the floor 177, 104, 89, 99, 102, then 75–85).
 *
 *   node --import tsx bench/supervisor-run.ts <mode> <server address> <allocations> <samples> [<unmeasured samples> [<warm passes>]]
 */
import { performance } from 'node:perf_hooks';
import { setImmediate as turn } from 'node:timers/promises';
import { Subject, filter, firstValueFrom, type Subscription } from 'rxjs';
import { request } from 'undici';
import { VirtualClock } from '../src/clock/index.js';
import { NomadClient } from '../src/nomad/client.js';
import { decodeFrame } from '../src/nomad/eventFrames.js';
import { tapResponse, type WireLayer } from '../src/nomad/wire.js';
import { createSupervisor, Supervisor, type SupervisorInput } from '../src/supervisor/index.js';
import { batchInputs, SUPERVISOR_TOPICS } from '../src/supervisor/nomadSource.js';
import { heapUsed } from './support/heap.js';
import { cpuMs } from './support/figures.js';

const [mode, address] = process.argv.slice(2) as [string, string];
const STREAM_PATH = `/v1/event/stream?index=0&${SUPERVISOR_TOPICS.map((topic) => `topic=${topic}`).join('&')}`;

interface Selected {
  lines: number;
  events: number;
  lastIndex: number;
  start: number;
}

async function bench(method: 'GET' | 'POST', path: string): Promise<string> {
  const { statusCode, body } = await request(`${address}${path}`, { method });
  const text = await body.text();
  if (statusCode >= 300) throw new Error(`${method} ${path}: ${statusCode} ${text}`);
  return text;
}
const select = async (name: string): Promise<Selected> => JSON.parse(await bench('POST', `/bench/select?name=${name}`)) as Selected;

const monotonicNs = (): bigint => process.hrtime.bigint();

/** Wall and CPU milliseconds of `run`, which starts the server writing and resolves at the end. */
async function timed(run: () => Promise<void>): Promise<{ wallMs: number; cpuMs: number }> {
  const [wall, cpu] = [performance.now(), cpuMs()];
  await run();
  return { wallMs: performance.now() - wall, cpuMs: cpuMs() - cpu };
}

// ---- the floor: a bare undici client that cuts the body into lines and gives each to JSON.parse ----

type LineParser = (text: string) => { Events?: unknown[] } | null;
const jsonParse: LineParser = (text) => JSON.parse(text) as { Events?: unknown[] };

class FloorReader {
  private parsedLines = 0;
  private waiter: { lines: number; resolve: () => void } | undefined;

  private constructor(
    private readonly parse: LineParser,
    private readonly onLine: ((frame: { Events: unknown[] }) => void) | undefined,
  ) {}

  /** Connected once the server's first heartbeat is in. */
  static async open(onLine?: (frame: { Events: unknown[] }) => void, parse: LineParser = jsonParse, name?: string): Promise<FloorReader> {
    const reader = new FloorReader(parse, onLine);
    const { body } = await request(`${address}${STREAM_PATH}${name === undefined ? '' : `&reader=${name}`}`);
    const chunks = body[Symbol.asyncIterator]();
    const first = await chunks.next();
    if (first.done) throw new Error('stream closed');
    void reader.read(chunks, first.value as Buffer);
    return reader;
  }

  /** Resolves once `count` more data lines have been parsed. */
  lines(count: number): Promise<void> {
    return new Promise((resolve) => {
      this.waiter = { lines: this.parsedLines + count, resolve };
    });
  }

  private async read(chunks: AsyncIterator<Buffer>, first: Buffer): Promise<void> {
    // The start of a line that began in an earlier chunk: only that is copied, once the line is whole.
    let pending: Buffer[] = [];
    for (let chunk: Buffer | undefined = first; chunk !== undefined; ) {
      let start = 0;
      for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
        const text = pending.length === 0 ? chunk.toString('utf8', start, nl) : Buffer.concat([...pending, chunk.subarray(start, nl)]).toString('utf8');
        pending = [];
        start = nl + 1;
        this.parsed(this.parse(text));
      }
      if (start < chunk.length) pending.push(chunk.subarray(start));
      const next = await chunks.next();
      chunk = next.done ? undefined : (next.value as Buffer);
    }
  }

  private parsed(frame: { Events?: unknown[] } | null): void {
    if (frame?.Events === undefined) return;
    this.parsedLines++;
    this.onLine?.(frame as { Events: unknown[] });
    if (this.waiter !== undefined && this.parsedLines >= this.waiter.lines) {
      const { resolve } = this.waiter;
      this.waiter = undefined;
      resolve();
    }
  }
}

async function floorPass(stream: string, parse: LineParser = jsonParse): Promise<{ wallMs: number; cpuMs: number; events: number }> {
  const { lines, events } = await select(stream);
  const reader = await FloorReader.open(undefined, parse);
  const done = reader.lines(lines);
  return { ...(await timed(async () => {
    await bench('POST', '/bench/go');
    await done;
  })), events };
}

// ---- Warden: createSupervisor over the same socket ----

function wardenOver(allocations: number): { supervisor: Supervisor; nomad: NomadClient } {
  const nomad = new NomadClient({ address });
  return { nomad, supervisor: createSupervisor({ nomad, historySize: Math.max(10_000, allocations) }) };
}

const streaming = (supervisor: Supervisor): Promise<unknown> => firstValueFrom(supervisor.connection$.pipe(filter((state) => state === 'streaming')));

/** Resolves when `count` verdicts have come (counted as they come: nothing polls). */
function verdicts(supervisor: Supervisor, count: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    supervisor.verdicts$.subscribe(() => {
      if (++seen === count) resolve();
    });
  });
}

async function wardenPass(stream: string, allocations: number): Promise<{ wallMs: number; cpuMs: number; events: number }> {
  const { events } = await select(stream);
  const { supervisor, nomad } = wardenOver(allocations);
  await streaming(supervisor);
  const done = verdicts(supervisor, allocations);
  const timing = await timed(async () => {
    await bench('POST', '/bench/go');
    await done;
  });
  await supervisor.stop();
  await nomad.close();
  return { ...timing, events };
}

const WARM = 2_000;

/** The warm passes: the small stream of that shape, `warmPasses` times, each with a reader of its own; the CPU ms of each. */
async function warmUp(reader: 'warden' | LineParser, stream: 'warm' | 'warm-cluster' = 'warm'): Promise<number[]> {
  const cpu: number[] = [];
  for (let pass = 0; pass < warmPasses; pass++) cpu.push((await (reader === 'warden' ? wardenPass(stream, WARM) : floorPass(stream, reader))).cpuMs);
  return cpu;
}

/**
 * The whole stream three ways in one process: first cold (the first pass of a fresh process, as a
 * `warden gate` in CI always is), then the warm passes, then again, measured in the steady state.
 */
async function throughput(warden: boolean, stream: 'full' | 'cluster', allocations: number): Promise<unknown> {
  const pass = () => (warden ? wardenPass(stream, allocations) : floorPass(stream));
  const { wallMs, cpuMs } = await pass();
  const warmCpuMs = await warmUp(warden ? 'warden' : jsonParse, stream === 'full' ? 'warm' : 'warm-cluster');
  return { ...(await pass()), cold: { wallMs, cpuMs }, warmCpuMs };
}

/** Who takes the single lines in the latency run: the floor, the floor with Warden's decoder, Warden. */
const LATENCY_READERS = ['floor', 'decoder', 'warden'] as const;
type LatencyReader = (typeof LATENCY_READERS)[number];
/** Lines a reader takes in a row: enough that its code is hot again (as in a supervisor of its own), few enough that the machine's moods fall on every reader alike. */
const LATENCY_BLOCK = 50;
/**
 * The readers' order in round `round`: each goes first in every third round. The first block of a
 * round is slower for whichever reader takes it (measured, 10,000 allocations: the floor's p50 105 µs
 * first and 83 µs second; the decoder reader's 103 first, 95 second; Warden's 137 first, 118–128
 * third), so a fixed order gave that reader's ratio a handicap of 15–25%.
 */
function inTurn(round: number): LatencyReader[] {
  const shift = round % LATENCY_READERS.length;
  return [...LATENCY_READERS.slice(shift), ...LATENCY_READERS.slice(0, shift)];
}

/**
 * Single-line latencies (ms) of each reader, in one process: line written → the time taken where the
 * reader learns of it (the floor's parsed frame, Warden's verdict subscriber). Each reader, on a
 * stream of its own, gets the same `unmeasured + samples` lines, LATENCY_BLOCK at a time in turns
 * (the order rotating: inTurn); the last `samples` are kept. Side by side, because this machine's
 * speed wanders by 1.3–1.6× for seconds at a time (measured: the floor's and the decoder reader's
 * p50, nearly the same work, 109 and 165 µs when taken one after the other in one process): readers
 * measured one after the other, or in processes of their own, took that for their difference (p50
 * ratios of 0.9–1.9 for the same code). Line by line in turns would not do either: each reader then
 * runs with its code cold from the others' (Warden's judging 3× slower, the floor's 1.4×).
 *
 * A supervisor that has been running sees every kind of update; here the single failures come after a
 * bulk of placements and starts, so the JIT first recompiles for them (V8 deoptimises code that meets
 * objects it was not compiled for, and optimises a function called once a line only after thousands
 * of lines): what is measured is the steady state. Measured on this machine, both the floor's and
 * Warden's latencies settle after about 3,000 lines (the floor's p50 from ~100 to ~65 µs, Warden's
 * p99 from ~1 ms to ~0.4 ms).
 */
async function latencies(samples: number, unmeasured: number, arrived: Record<LatencyReader, () => Promise<bigint>>): Promise<Record<LatencyReader, number[]>> {
  const seen = new Map<LatencyReader, bigint[]>(LATENCY_READERS.map((reader) => [reader, []]));
  for (let block = 0; block < unmeasured + samples; block += LATENCY_BLOCK) {
    for (const reader of inTurn(block / LATENCY_BLOCK)) {
      for (let i = block; i < Math.min(block + LATENCY_BLOCK, unmeasured + samples); i++) {
        const next = arrived[reader]();
        await bench('POST', `/bench/next?to=${reader}`);
        seen.get(reader)?.push(await next);
      }
    }
  }
  const measured = async (reader: LatencyReader): Promise<number[]> => {
    const written = (JSON.parse(await bench('GET', `/bench/writes?to=${reader}`)) as string[]).map(BigInt);
    if (written.length !== unmeasured + samples) throw new Error(`server wrote ${written.length} lines to ${reader}, expected ${unmeasured + samples}`);
    return (seen.get(reader) ?? []).slice(unmeasured).map((at, i) => Number(at - (written[unmeasured + i] as bigint)) / 1e6);
  };
  return { floor: await measured('floor'), decoder: await measured('decoder'), warden: await measured('warden') };
}

/** Resolves with the time of the next call of the callback it installs (see latencies). */
function nextCall(install: (callback: (at: bigint) => void) => void): () => Promise<bigint> {
  return () => new Promise((resolve) => install(resolve));
}

async function latency(allocations: number, samples: number): Promise<unknown> {
  await warmUp(jsonParse);
  await warmUp(decodeFrame);
  await warmUp('warden');
  await select('tracked');
  const { supervisor } = wardenOver(allocations);
  await streaming(supervisor);
  const heapBefore = heapUsed();
  let waiting = 0;
  let waitingSeen: Subscription | undefined;
  const allWaiting = new Promise<void>((resolve) => {
    waitingSeen = supervisor.changes$.subscribe((change) => {
      if (change.to === 'minHealthyWait' && ++waiting === allocations) resolve();
    });
  });
  await bench('POST', '/bench/go');
  await allWaiting;
  // Its job done: what is timed below is a supervisor whose one subscriber takes verdicts.
  waitingSeen?.unsubscribe();
  const heapBytesPerAllocation = (heapUsed() - heapBefore) / allocations;
  if (supervisor.supervised !== allocations) throw new Error(`${supervisor.supervised} supervised, expected ${allocations}`);
  let decided: ((at: bigint) => void) | undefined;
  supervisor.verdicts$.subscribe(() => decided?.(monotonicNs()));
  let parsed: ((at: bigint) => void) | undefined;
  let decoded: ((at: bigint) => void) | undefined;
  await FloorReader.open(() => parsed?.(monotonicNs()), jsonParse, 'floor');
  await FloorReader.open(() => decoded?.(monotonicNs()), decodeFrame, 'decoder');
  const latenciesMs = await latencies(samples, unmeasured, {
    floor: nextCall((callback) => (parsed = callback)),
    decoder: nextCall((callback) => (decoded = callback)),
    warden: nextCall((callback) => (decided = callback)),
  });
  return { heapBytesPerAllocation, latenciesMs };
}

// ---- timers: verdicts that only time reaches, in virtual time ----

/** Counts the requests in flight under a client, and tells when none is left. */
class InFlight {
  private count = 0;
  private idle: (() => void)[] = [];
  readonly layer: WireLayer = (network) => ({
    send: async (wireRequest) => {
      this.count++;
      try {
        return tapResponse(await network.send(wireRequest), { end: () => this.done() });
      } catch (error) {
        this.done();
        throw error;
      }
    },
    close: () => network.close(),
  });

  /** Once every request sent is answered, and what it started has run. */
  async settled(): Promise<void> {
    await turn();
    while (this.count > 0) {
      await new Promise<void>((resolve) => this.idle.push(resolve));
      await turn();
    }
  }

  private done(): void {
    if (--this.count > 0) return;
    const idle = this.idle;
    this.idle = [];
    for (const resolve of idle) resolve();
  }
}

/** The stream's supervisor inputs, decoded by Warden's own decoder (as the event stream would), before anything is timed. */
async function decodedInputs(name: string): Promise<SupervisorInput[]> {
  const text = await bench('GET', `/bench/stream?name=${name}`);
  return text.split('\n').filter((line) => line !== '').flatMap((line) => {
    const frame = decodeFrame(line);
    return frame === null ? [] : batchInputs({ index: frame.Index, events: frame.Events, resync: false });
  });
}

async function timers(kind: 'healthy' | 'deadline', allocations: number): Promise<unknown> {
  const name = `timers-${kind}`;
  const { lastIndex, start } = await select(name);
  const clock = new VirtualClock({ start });
  const reads = new InFlight();
  const nomad = new NomadClient({ address }, { clock, wire: reads.layer });
  const source = new Subject<SupervisorInput>();
  const supervisor = new Supervisor({ nomad, clock, source, freshness: { namespace: 'default' }, historySize: allocations });
  let decided = 0;
  let healthy = 0;
  supervisor.verdicts$.subscribe(({ outcome }) => {
    decided++;
    if ('healthy' in outcome && outcome.healthy) healthy++;
  });
  source.next({ kind: 'connection', state: 'streaming', index: 0 });
  const heapBefore = heapUsed();
  let inputs = await decodedInputs(name);
  const feed = await timed(async () => {
    for (const input of inputs) source.next(input);
    await turn();
  });
  inputs = [];
  if (supervisor.supervised !== allocations) throw new Error(`${supervisor.supervised} supervised after the feed, expected ${allocations}`);
  const heapWaiting = (heapUsed() - heapBefore) / allocations;
  let rounds = 0;
  const decide = await timed(async () => {
    while (decided < allocations) {
      const due = clock.nextDue();
      if (due === undefined) throw new Error(`no timer left with ${decided} of ${allocations} decided`);
      clock.advanceTo(due);
      await reads.settled();
      rounds++;
    }
  });
  const heapDecided = (heapUsed() - heapBefore) / allocations;
  await supervisor.stop();
  await nomad.close();
  return {
    kind, allocations, lastIndex, healthy, unhealthy: decided - healthy, virtualSeconds: (clock.now() - start) / 1000, timerRounds: rounds,
    feed, decide, heapBytesPerAllocation: { waiting: heapWaiting, decided: heapDecided },
  };
}

const allocations = Number(process.argv[4]);
const samples = Number(process.argv[5]);
const unmeasured = Number(process.argv[6] ?? samples);
const warmPasses = Number(process.argv[7] ?? 1);
const result =
  mode === 'floor-throughput' || mode === 'warden-throughput' ? await throughput(mode.startsWith('warden'), 'full', allocations)
  : mode === 'floor-cluster' || mode === 'warden-cluster' ? await throughput(mode.startsWith('warden'), 'cluster', allocations)
  : mode === 'latency' ? await latency(allocations, samples)
  : mode === 'timers-healthy' || mode === 'timers-deadline' ? await timers(mode === 'timers-healthy' ? 'healthy' : 'deadline', allocations)
  : undefined;
if (result === undefined) throw new Error(`unknown mode ${mode}`);
// Exits once the pipe has taken the whole answer (an exit right after a write to a pipe can cut it).
process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
