/**
 * Judging alone: what the supervisor does with an event once it is decoded, without the socket, the
 * fake server or the decoding (bench/supervisor.ts measures the whole). The stream of
 * bench/supervisor.ts (every allocation placed, running, then failing; `--batch` events a line) is
 * built in this process; each round decodes it line by line with Warden's own decoder and hands each
 * batch to a fresh Supervisor (a Subject as its source, a VirtualClock that never moves: every verdict
 * here is reached by the data). Only the hand-over is timed, as CPU: every allocation from its
 * placement to its verdict. The baseline, in the same rounds, is JSON.parse of the same lines.
 * Rounds after `--warm-rounds` count; figures are medians. Its noise is a few percent, against 5–8%
 * for whole-supervisor runs, so it is the figure to compare two versions of the judging path by.
 *
 *   npx tsx bench/supervisor-judging.ts [--allocations 10000] [--rounds 10] [--warm-rounds 3] [--batch 100]
 */
import { Subject } from 'rxjs';
import { VirtualClock } from '../src/clock/index.js';
import { NomadClient } from '../src/nomad/client.js';
import { decodeFrame } from '../src/nomad/eventFrames.js';
import { batchInputs } from '../src/supervisor/nomadSource.js';
import { Supervisor, type SupervisorInputs } from '../src/supervisor/index.js';
import { cpuMs, median, numberOption, round } from './support/figures.js';
import { benchStreams } from './supervisor-stream.js';

const ALLOCATIONS = numberOption('allocations', 10_000);
const ROUNDS = numberOption('rounds', 10);
const WARM_ROUNDS = numberOption('warm-rounds', 3);
const BATCH = numberOption('batch', 100);
// The data decides every verdict before this policy's timers could (see bench/supervisor-stream.ts).
const POLICY = { minHealthyTimeMs: 3_600_000, healthyDeadlineMs: 7_200_000 };

const start = Date.UTC(2026, 0, 1);
const streams = benchStreams(ALLOCATIONS, BATCH, start, POLICY);
const lines = [...streams.placed(), ...streams.running(), ...streams.failing()];

/** A client that reads nothing: every verdict here comes from the stream, and a read would be a bug of this benchmark. */
function clientWithoutNetwork(clock: VirtualClock): NomadClient {
  return new NomadClient(
    { address: 'http://127.0.0.1:1' },
    { clock, wire: () => ({ send: () => Promise.reject(new Error('bench/supervisor-judging reads nothing from Nomad')), close: async () => undefined }) },
  );
}

interface Round {
  judgingMs: number;
  parseMs: number;
  events: number;
}

async function round1(): Promise<Round> {
  const clock = new VirtualClock({ start: start + 60_000 });
  const source = new Subject<SupervisorInputs>();
  const nomad = clientWithoutNetwork(clock);
  // The stream's payloads are Nomad 1.1.2's: its release stated, since this client cannot be asked it.
  const supervisor = new Supervisor({ nomad, clock, source, historySize: ALLOCATIONS, nomadVersion: '1.1.2' });
  let verdicts = 0;
  const problems: string[] = [];
  supervisor.verdicts$.subscribe(() => verdicts++);
  supervisor.problems$.subscribe((problem) => problems.push(problem.message));
  source.next({ kind: 'connection', state: 'streaming', index: 0 });
  let judgingMs = 0;
  let parseMs = 0;
  let events = 0;
  for (const line of lines) {
    const before = cpuMs();
    JSON.parse(line);
    parseMs += cpuMs() - before;
    const frame = decodeFrame(line);
    if (frame === null) continue;
    events += frame.Events.length;
    const inputs = batchInputs({ index: frame.Index, events: frame.Events, resync: false });
    const handed = cpuMs();
    source.next(inputs);
    judgingMs += cpuMs() - handed;
  }
  await supervisor.stop();
  await nomad.close();
  if (verdicts !== ALLOCATIONS) throw new Error(`${verdicts} verdicts, expected ${ALLOCATIONS}${problems.length > 0 ? `: ${problems.slice(0, 3).join('; ')}` : ''}`);
  return { judgingMs, parseMs, events };
}

const rounds: Round[] = [];
for (let r = 0; r < WARM_ROUNDS + ROUNDS; r++) {
  const result = await round1();
  if (r >= WARM_ROUNDS) rounds.push(result);
  console.error(`  round ${r + 1} of ${WARM_ROUNDS + ROUNDS}${r < WARM_ROUNDS ? ' (warm-up)' : ''}: judging ${result.judgingMs.toFixed(1)} ms`);
}
const events = rounds[0]?.events ?? 0;
const judgingMs = median(rounds.map((r) => r.judgingMs));
const parseMs = median(rounds.map((r) => r.parseMs));
console.log(
  JSON.stringify(
    {
      bench: 'supervisor-judging',
      allocations: ALLOCATIONS,
      events,
      rounds: ROUNDS,
      warmRounds: WARM_ROUNDS,
      judging: { cpuMs: round(judgingMs), microsecondsPerEvent: round((judgingMs * 1000) / events, 3) },
      jsonParse: { cpuMs: round(parseMs), microsecondsPerEvent: round((parseMs * 1000) / events, 3) },
      ratios: { judgingVsJsonParse: round(judgingMs / parseMs, 3) },
    },
    null,
    2,
  ),
);
