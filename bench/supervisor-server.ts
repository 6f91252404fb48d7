/**
 * The server of bench/supervisor.ts, in its own process: a trivial node:http server that only writes
 * bytes built before anything is timed. It serialises every stream once at start (or on first
 * request), as Buffers, and then:
 *
 * - GET /v1/event/stream: 200, a `{}` heartbeat at once (as Nomad does) and every 10 s; the lines of
 *   the selected stream are written to it on POST /bench/go, one write a line (Nomad flushes each
 *   frame), waiting for the socket to drain. `&reader=<name>` opens a stream of a reader of its own
 *   beside Warden's (the floor's readers in the latency run), which only POST /bench/next writes to;
 * - GET /v1/allocations: `[]` with X-Nomad-Index at the selected stream's last index (the listing a
 *   supervisor makes at start, and the freshness read: everything is delivered);
 * - POST /bench/select?name=…: which stream `go` writes; answers its line and event counts;
 * - POST /bench/next[?to=<reader>]: answers at once, then writes the next single-allocation line
 *   1 ms later to that reader's stream (default Warden's), noting the monotonic time (process.hrtime,
 *   the same clock in every process) just before; every reader gets the same lines in the same
 *   order; GET /bench/writes[?to=<reader>] gives those times;
 * - GET /bench/stream?name=…: the stream's bytes as one body (the timer benchmark decodes them up front).
 *
 *   node --import tsx bench/supervisor-server.ts <allocations> <batch> <latency samples>
 */
import { createServer, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import { benchStreams, type BenchStreams } from './supervisor-stream.js';

const [allocations, batch, samples] = process.argv.slice(2).map(Number) as [number, number, number];
const WARM_ALLOCATIONS = 2_000;
/** Streams on the system clock: time must decide nothing while a run lasts, so only data does. */
const DATA_POLICY = { minHealthyTimeMs: 3_600_000, healthyDeadlineMs: 7_200_000 };
/** Streams on a virtual clock: decided by min_healthy_time, or by a 5-minute healthy_deadline. */
const TIMER_POLICY = { minHealthyTimeMs: 10_000, healthyDeadlineMs: 300_000 };
const TIMER_START = Date.UTC(2026, 0, 1);

interface Stream {
  lines: Buffer[];
  events: number;
  lastIndex: number;
  /** Epoch ms of its first event. */
  start: number;
}

function stream(builder: BenchStreams, parts: string[][]): Stream {
  const texts = parts.flat();
  const events = texts.reduce((sum, text) => sum + (text.match(/"Topic":/g)?.length ?? 0), 0);
  return { lines: texts.map((text) => Buffer.from(`${text}\n`)), events, lastIndex: builder.nextIndex - 1, start: builder.start };
}

const builders = new Map<string, () => Stream>([
  ['warm', () => {
    const b = benchStreams(WARM_ALLOCATIONS, batch, Date.now(), DATA_POLICY);
    return stream(b, [b.placed(), b.running(), b.failing()]);
  }],
  ['warm-cluster', () => {
    const b = benchStreams(WARM_ALLOCATIONS, batch, Date.now(), DATA_POLICY);
    return stream(b, [b.cluster()]);
  }],
  ['cluster', () => {
    const b = benchStreams(allocations, batch, Date.now(), DATA_POLICY);
    return stream(b, [b.cluster()]);
  }],
  ['timers-healthy', () => {
    const b = benchStreams(allocations, batch, TIMER_START, TIMER_POLICY);
    return stream(b, [b.placed(), b.running()]);
  }],
  ['timers-deadline', () => {
    const b = benchStreams(allocations, batch, TIMER_START, TIMER_POLICY);
    return stream(b, [b.placed(), b.stuck()]);
  }],
]);
// The data-decided streams share one builder: the single failures follow the batched ones' indexes.
const main = benchStreams(allocations, batch, Date.now(), DATA_POLICY);
const [placed, running, failing] = [main.placed(), main.running(), main.failing()];
const singles = stream(main, [main.failingSingles(0, samples)]);
const streams = new Map<string, Stream>([
  ['full', stream(main, [placed, running, failing])],
  ['tracked', stream(main, [placed, running])],
]);
function streamNamed(name: string): Stream | undefined {
  let found = streams.get(name);
  const build = builders.get(name);
  if (found === undefined && build !== undefined) streams.set(name, (found = build()));
  return found;
}
streamNamed('warm');
streamNamed('warm-cluster');

let selected: Stream = streams.get('tracked') as Stream;
/** The open event streams by reader (`?reader=`; Warden's own asks without one). */
const listening = new Map<string, ServerResponse>();
/** The next single line of each reader: each gets the same lines, in the same order. */
const nextSingles = new Map<string, number>();
const writes = new Map<string, bigint[]>();
const MAIN_READER = 'warden';

async function writeAll(res: ServerResponse, lines: readonly Buffer[]): Promise<void> {
  for (const line of lines) if (!res.write(line)) await once(res, 'drain');
}

const json = (res: ServerResponse, value: unknown, headers: Record<string, string> = {}): void => {
  res.writeHead(200, { 'Content-Type': 'application/json', ...headers }).end(JSON.stringify(value));
};

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://bench');
  const name = url.searchParams.get('name') ?? '';
  switch (`${req.method} ${url.pathname}`) {
    case 'GET /v1/event/stream': {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{}\n');
      const reader = url.searchParams.get('reader') ?? MAIN_READER;
      listening.set(reader, res);
      const heartbeat = setInterval(() => res.write('{}\n'), 10_000);
      res.on('close', () => clearInterval(heartbeat));
      return;
    }
    // The payloads are Nomad 1.1.2's: the supervisor reads the cluster's release once at start, as from a real agent.
    case 'GET /v1/agent/self':
      return json(res, { config: { Version: { Version: '1.1.2', VersionPrerelease: '', VersionMetadata: '' } } });
    case 'GET /v1/allocations':
      return json(res, [], { 'X-Nomad-Index': String(selected.lastIndex), 'X-Nomad-KnownLeader': 'true', 'X-Nomad-LastContact': '0' });
    case 'POST /bench/select': {
      const found = streamNamed(name);
      if (found === undefined) return void res.writeHead(404).end(`no stream ${name}`);
      selected = found;
      nextSingles.clear();
      writes.clear();
      return json(res, { lines: found.lines.length, events: found.events, lastIndex: found.lastIndex, start: found.start });
    }
    case 'POST /bench/go': {
      res.writeHead(204).end();
      const main = listening.get(MAIN_READER);
      if (main !== undefined) void writeAll(main, selected.lines);
      return;
    }
    case 'POST /bench/next': {
      res.writeHead(204).end();
      const to = url.searchParams.get('to') ?? MAIN_READER;
      const next = nextSingles.get(to) ?? 0;
      nextSingles.set(to, next + 1);
      const line = singles.lines[next];
      setTimeout(() => {
        const reader = listening.get(to);
        if (line === undefined || reader === undefined) return;
        const written = writes.get(to) ?? [];
        writes.set(to, written);
        // The time is the last thing before the write, so nothing of the server's own falls inside it.
        written.push(process.hrtime.bigint());
        reader.write(line);
      }, Number(url.searchParams.get('gap') ?? 1));
      return;
    }
    case 'GET /bench/writes':
      return json(res, (writes.get(url.searchParams.get('to') ?? MAIN_READER) ?? []).map(String));
    case 'GET /bench/stream': {
      const found = streamNamed(name);
      if (found === undefined) return void res.writeHead(404).end(`no stream ${name}`);
      return void res.writeHead(200, { 'Content-Type': 'application/x-ndjson' }).end(Buffer.concat(found.lines));
    }
    default:
      console.error(`bench server: unexpected ${req.method} ${req.url}`);
      res.writeHead(404).end('not found');
  }
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  process.stdout.write(`${JSON.stringify({ address: `http://127.0.0.1:${address.port}`, singles: singles.lines.length })}\n`);
});
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
