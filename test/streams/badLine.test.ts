/**
 * Lines Nomad sends that cannot be used. A batch line that does not decode (garbled, or nested so
 * deep that decoding overflows the stack) but names its index is reported once and skipped on the
 * same connection, and the allocations it carried are recovered by listing them; an unusable event
 * inside a good batch is skipped alone; text that names no batch reconnects, backing off further
 * each time it fails again. FakeNomad keeps a rewritten line in its event buffer, as a Nomad that
 * sent it would.
 */
import { VirtualClock } from '../../src/clock/index.js';
import { NomadClient } from '../../src/nomad/client.js';
import { nomadEventStream, type EventBatch, type StreamState } from '../../src/nomad/eventStream.js';
import { seededRandom } from '../../src/random.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { parseLossless, stringifyLossless } from '../../src/testing/losslessJson.js';
import { isHeartbeatLine, type RecordedLine, type Scenario } from '../../src/testing/recording.js';
import { until } from '../nomad/support.js';
import { call } from '../testing/helpers.js';
import { openStream } from '../testing/streamClient.js';
import {
  STREAM_TOPICS,
  firstIndex,
  lastRecordedIndex,
  recordedFinals,
  recordedOthers,
  replayThroughStream,
  scenario,
} from './replayHarness.js';

type Batch = { Index: number; Events: { Topic: string; Key: string; Payload: Record<string, unknown> }[] };

const batchOf = (line: RecordedLine): Batch => parseLossless(line.raw) as unknown as Batch;

/** The recording's data indexes from its first own index, in order, without repeats. */
function indexes(recorded: Scenario): number[] {
  const all = recorded.stream.filter((l) => !isHeartbeatLine(l)).map((l) => batchOf(l).Index);
  return [...new Set(all)].filter((i) => i >= firstIndex(recorded));
}

/** The recording as if Nomad had never sent the batch at `index` (or had sent it rewritten). */
function without(recorded: Scenario, index: number, keep?: (line: RecordedLine) => RecordedLine): Scenario {
  const stream = recorded.stream.flatMap((line) => {
    if (isHeartbeatLine(line) || batchOf(line).Index !== index) return [line];
    return keep === undefined ? [] : [keep(line)];
  });
  return { ...recorded, stream };
}

/** A recorded line with bytes inserted in its middle: JSON no more, head and trailing Index intact. */
const corrupt = (line: string): string => `${line.slice(0, line.length >> 1)}\u0007#garbage#${line.slice(line.length >> 1)}`;

/** Valid JSON that a decoder walking it recursively would not survive: Nomad's batch head and tail around an element 5,000 deep. */
const nestedDeep = (_line: string, index: number): string => `{"Events":[${'['.repeat(5_000)}${']'.repeat(5_000)}],"Index":${index}}`;

/**
 * The same batch with an exact-int64 timestamp patch that cannot finish: its first allocation gains
 * a field 5,000 deep with an unsafe Time at the bottom, where the frame's own timestamp places are
 * not, so the patch falls back to walking the whole document, which stops 1,000 levels down.
 */
function deepTimestamp(line: string): string {
  const batch = parseLossless(line) as unknown as Batch;
  const allocation = batch.Events.find((e) => e.Topic === 'Allocation')!.Payload.Allocation as Record<string, unknown>;
  const deep = `${'{"a":'.repeat(5_000)}{"Time":1795971900000000001}${'}'.repeat(5_000)}`;
  allocation.Deep = null;
  // Spliced as text: the lossless writer recurses too.
  return stringifyLossless(batch).replace('"Deep":null', `"Deep":${deep}`);
}

/**
 * The middle of the batch indexes that carry some allocation's last recorded version: a stream that
 * skips it and lists nothing ends with that allocation one version short.
 */
function carryingAFinal(recorded: Scenario): number {
  const lastSeenAt = new Map<string, number>();
  for (const line of recorded.stream) {
    if (isHeartbeatLine(line)) continue;
    const batch = batchOf(line);
    if (batch.Index < firstIndex(recorded)) continue;
    for (const event of batch.Events) if (event.Topic === 'Allocation') lastSeenAt.set(event.Key, batch.Index);
  }
  const carrying = [...new Set(lastSeenAt.values())].sort((a, b) => a - b);
  return carrying[carrying.length >> 1]!;
}

const skips = (batches: readonly EventBatch[]) => batches.flatMap((b) => (b.skipped === undefined ? [] : [b.skipped]));

/** The state as it stood before the test unsubscribed. */
const lastLive = (states: readonly StreamState[]): StreamState | undefined => states.filter((s) => s.status !== 'stopped').at(-1);

describe('a batch line that does not decode but names its index', () => {
  const wholeBatch = { skippedBatches: 1, skippedEvents: 0 };
  it.each([
    ['rolling_update', 'garbled', corrupt, { reason: expect.stringMatching(/^malformed JSON/), excerpt: expect.stringMatching(/^\{"Events":/) }, wholeBatch],
    ['many_allocs', 'garbled', corrupt, { reason: expect.stringMatching(/^malformed JSON/), excerpt: expect.stringContaining('#garbage#') }, wholeBatch],
    ['many_allocs', 'a timestamp 5,000 deep', deepTimestamp, { reason: 'undecodable JSON: RangeError: nested deeper than 1000 levels', excerpt: expect.any(String) }, wholeBatch],
    // Its one element is no event: skipped as such, its excerpt written only as far as shown.
    ['rolling_update', 'an element nested 5,000 deep', nestedDeep, { position: 0, reason: 'not an object', excerpt: '['.repeat(120) }, { skippedBatches: 0, skippedEvents: 1 }],
  ])('%s, %s: reported once with its index, same connection, its allocations recovered by a listing', async (name, _what, rewrite, report, counts) => {
    const recorded = scenario(name);
    const bad = carryingAFinal(recorded);
    const run = await replayThroughStream(recorded, undefined, {}, {}, { replay: { rewriteLine: (line, index) => (index === bad ? rewrite(line, index) : line) } });

    expect(skips(run.batches)).toEqual([{ index: bad, count: 1, examples: [{ index: bad, ...report }] }]);
    const skippedAt = run.batches.findIndex((b) => b.skipped !== undefined);
    expect(run.batches[skippedAt]).toMatchObject({ index: bad, events: [], resync: false });
    // One connection throughout: connected once, never backing off.
    const statuses = run.states.map((s) => s.status);
    expect(statuses.filter((s) => s === 'connecting')).toHaveLength(1);
    expect(statuses).not.toContain('backingOff');
    expect(lastLive(run.states)).toMatchObject({ status: 'streaming', ...counts, failures: 0, lastIndex: lastRecordedIndex(recorded) });
    // After the skip, a listing: every allocation ends as Nomad has it, although the skipped batch
    // held the last version of some (without the listing they would end one version short).
    expect(run.batches.slice(skippedAt).filter((b) => b.resync)).toHaveLength(1);
    expect(recordedFinals(without(recorded, bad))).not.toEqual(recordedFinals(recorded));
    expect(run.finals).toEqual(recordedFinals(recorded));
    expect(run.regressions).toEqual([]);
    // The other events only that batch carried are missing; every other one arrived, once, in order.
    expect(run.others).toEqual(recordedOthers(without(recorded, bad)));
    expect(run.batches.some((b) => !b.resync && b.index === bad && b.events.length > 0)).toBe(false);
  });

  it('an allocation the listing cannot decode (nested 5,000 deep, every time) is reported and skipped; the others are recovered, on one connection', async () => {
    const recorded = scenario('many_allocs');
    const bad = carryingAFinal(recorded);
    const full = recordedFinals(recorded);
    const short = recordedFinals(without(recorded, bad));
    const victim = [...full.keys()].find((id) => full.get(id)?.modifyIndex !== short.get(id)?.modifyIndex)!;
    const deep = `{"ID":"${victim}","Deep":${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)},"ModifyTime":1795971902180095019}`;
    const run = await replayThroughStream(
      recorded,
      (fake) => void fake.faults.failRequests({ status: 200, body: deep, path: `/v1/allocation/${victim}`, times: Infinity }),
      {},
      {},
      { replay: { rewriteLine: (line, index) => (index === bad ? corrupt(line) : line) } },
    );
    const listing = run.batches.find((b) => b.resync)!;
    expect(listing.skipped).toEqual({
      index: listing.index,
      count: 1,
      examples: [{ index: listing.index, reason: `allocation ${victim}: undecodable JSON: RangeError: nested deeper than 1000 levels`, excerpt: deep.slice(0, 120) }],
    });
    expect(run.states.map((s) => s.status)).not.toContain('backingOff');
    expect(lastLive(run.states)).toMatchObject({ status: 'streaming', skippedBatches: 1, skippedEvents: 1, lastIndex: lastRecordedIndex(recorded) });
    // Only the one it could not read ends short; every other allocation is as Nomad has it.
    expect(run.finals).toEqual(new Map([...full].map(([id, summary]) => [id, id === victim ? short.get(id) : summary])));
  });

  it('lists nothing when the stream watches no allocations', async () => {
    const recorded = scenario('rolling_update');
    // A batch of a deployment, a job and an evaluation: all of it reaches this subscription.
    const bad = indexes(recorded).find((i) => recorded.stream.some((l) => !isHeartbeatLine(l) && batchOf(l).Index === i && batchOf(l).Events.length === 3 && batchOf(l).Events.every((e) => e.Topic !== 'Allocation')))!;
    let listings = 0;
    const run = await replayThroughStream(
      recorded,
      (fake) => fake.server.on('request', (req: { url?: string }) => void (/^\/v1\/(allocations|job\/)/.test(req.url ?? '') && listings++)),
      { topics: ['Job', 'Evaluation', 'Deployment'] },
      {},
      { waitFor: 'replay', replay: { rewriteLine: (line, index) => (index === bad ? corrupt(line) : line) } },
    );
    expect(skips(run.batches).map((s) => s.index)).toEqual([bad]);
    expect(run.batches.filter((b) => b.resync)).toEqual([]);
    expect(listings).toBe(0);
  });

  it('is reported once even when Nomad sends it again after a reconnect, and resume moves past it', async () => {
    const recorded = scenario('rolling_update');
    const all = indexes(recorded);
    const bad = all[all.length >> 1]!;
    // The connection is cut right after the bad line: the next one asks from its index, Nomad replays it.
    const eventsThrough = recorded.stream
      .filter((l) => !isHeartbeatLine(l))
      .map(batchOf)
      .filter((b) => b.Index >= firstIndex(recorded) && b.Index <= bad)
      .reduce((n, b) => n + b.Events.length, 0);
    const run = await replayThroughStream(recorded, (fake) => void fake.faults.stream({ cutAfterEvents: eventsThrough }), {}, {}, {
      replay: { rewriteLine: (line, index) => (index === bad ? corrupt(line) : line) },
    });
    expect(skips(run.batches).map((s) => s.index)).toEqual([bad]);
    expect(run.states.map((s) => s.status).filter((s) => s === 'backingOff')).toHaveLength(1);
    expect(run.states.find((s) => s.status === 'backingOff')?.lastIndex).toBe(bad);
    expect(lastLive(run.states)).toMatchObject({ skippedBatches: 1, lastIndex: lastRecordedIndex(recorded) });
    expect(run.regressions).toEqual([]);
  });
});

describe('an unusable event inside a good batch', () => {
  it('is skipped alone, with its index, position and reason; its neighbours are delivered', async () => {
    const recorded = scenario('many_allocs');
    // A batch of several allocation updates: its second one loses its allocation.
    const line = recorded.stream.find((l) => !isHeartbeatLine(l) && batchOf(l).Events.filter((e) => e.Topic === 'Allocation').length > 3)!;
    const bad = batchOf(line);
    const position = bad.Events.findIndex((e, i) => i > 0 && e.Topic === 'Allocation');
    const edit = (keep: boolean) => (raw: string) => {
      const batch = parseLossless(raw) as unknown as Batch;
      if (keep) batch.Events[position]!.Payload = { Allocation: 'gone' };
      else batch.Events.splice(position, 1);
      return stringifyLossless(batch);
    };
    const run = await replayThroughStream(recorded, undefined, {}, {}, {
      replay: { rewriteLine: (raw, index) => (index === bad.Index ? edit(true)(raw) : raw) },
    });

    expect(skips(run.batches)).toEqual([
      {
        index: bad.Index,
        count: 1,
        examples: [{ index: bad.Index, position, reason: 'Allocation event whose Payload has no Allocation with an ID', excerpt: expect.stringContaining('"Allocation":"gone"') }],
      },
    ]);
    const delivered = run.batches.find((b) => b.index === bad.Index)!;
    expect(delivered.events).toHaveLength(bad.Events.length - 1);
    expect(lastLive(run.states)).toMatchObject({ skippedEvents: 1, skippedBatches: 0 });
    expect(run.states.map((s) => s.status)).not.toContain('backingOff');
    const expected = without(recorded, bad.Index, (l) => ({ ...l, raw: edit(false)(l.raw) }));
    expect(run.finals).toEqual(recordedFinals(expected));
    expect(run.others).toEqual(recordedOthers(expected));
    expect(run.regressions).toEqual([]);
  });
});

describe('text that names no batch', () => {
  it("Nomad's raw error text still reconnects and recovers: one back-off, two connections, the same final states", async () => {
    const recorded = scenario('rolling_update');
    const run = await replayThroughStream(recorded, (fake) => void fake.faults.stream({ errorAfterEvents: 6 }));
    const statuses = run.states.map((s) => s.status);
    expect(statuses.filter((s) => s === 'connecting')).toHaveLength(2);
    const backingOff = run.states.filter((s) => s.status === 'backingOff');
    expect(backingOff).toHaveLength(1);
    expect(backingOff[0]!.error?.message).toMatch(/error from Nomad: subscription closed by server/);
    expect(run.finals).toEqual(recordedFinals(recorded));
    expect(run.others).toEqual(recordedOthers(recorded));
    expect(skips(run.batches)).toEqual([]);
  });

  /**
   * Follows a replay whose line at `bad` is replaced for good by `text`, for ten virtual minutes.
   * Every reconnect meets it again: the stream is stuck before it, and must say so without a hot loop.
   */
  async function stuckOn(text: string) {
    const recorded = scenario('rolling_update');
    const all = indexes(recorded);
    const bad = all[all.length >> 1]!;
    const clock = new VirtualClock({ start: 1_795_971_900_000 });
    const fake = await FakeNomad.start({ clock });
    const client = new NomadClient({ address: fake.address }, { clock });
    const stream = nomadEventStream(client, { topics: STREAM_TOPICS, index: firstIndex(recorded), clock, backoff: { random: seededRandom(3) } });
    const states: (StreamState & { at: number })[] = [];
    const batches: EventBatch[] = [];
    const s1 = stream.state.subscribe((s) => states.push({ ...s, at: clock.now() }));
    const s2 = stream.batches.subscribe((b) => batches.push(b));
    let streamRequests = 0;
    fake.server.on('request', (req: { url?: string }) => void (req.url?.startsWith('/v1/event/stream') && streamRequests++));
    try {
      fake.replay(recorded.stream, { fromIndex: firstIndex(recorded), rewriteLine: (line, index) => (index === bad ? text : line) });
      const end = clock.now() + 600_000;
      await until(clock, () => clock.now() >= end, 'ten minutes', { stepMs: 250, maxMs: 700_000 });
      return { bad, before: all[all.indexOf(bad) - 1]!, states, batches, streamRequests };
    } finally {
      s1.unsubscribe();
      s2.unsubscribe();
      await client.close();
      await fake.close();
    }
  }

  it.each([
    ['raw error text', 'rpc error: EOF', /error from Nomad: rpc error: EOF/],
    ['a batch line cut short', '{"Events":[{"FilterKeys":["rolling-update",""],"Index"', /naming no batch index to skip: malformed JSON.*near "\{\\"Events\\"/],
  ])('%s that Nomad sends on every reconnect: back-off grows, no hot loop, the state says why', async (_what, text, why) => {
    const { bad, before, states, batches, streamRequests } = await stuckOn(text);
    const backingOff = states.filter((s) => s.status === 'backingOff');
    // Ten minutes at the first retry delay (at most 500 ms) would be over 1,200 connections.
    expect(streamRequests).toBeGreaterThanOrEqual(8);
    expect(streamRequests).toBeLessThan(40);
    expect(backingOff.map((s) => s.failures)).toEqual(backingOff.map((_s, i) => i + 1));
    const delays = backingOff.map((s) => s.retryAt! - s.at);
    expect(delays[0]).toBeLessThanOrEqual(500);
    expect(delays.at(-1)).toBeGreaterThanOrEqual(15_000);
    for (const state of backingOff) {
      expect(state.error?.message).toMatch(why);
      expect(state.lastIndex).toBe(before);
    }
    // Past it, only what the listing after each reconnect brings (list, then watch).
    expect(batches.filter((b) => !b.resync).every((b) => b.index < bad)).toBe(true);
    expect(batches.flatMap((b) => b.skipped ?? [])).toEqual([]);
  });
});

describe('FakeNomad replay rewriteLine', () => {
  it('serves the rewritten line for its index, again to every new subscription, while the cluster state takes the batch', async () => {
    const recorded = scenario('healthy_task_states');
    const clock = new VirtualClock({ start: 1_795_971_900_000 });
    const fake = await FakeNomad.start({ clock });
    try {
      const all = indexes(recorded);
      const bad = all.find((i) => recorded.stream.some((l) => !isHeartbeatLine(l) && batchOf(l).Index === i && batchOf(l).Events.some((e) => e.Topic === 'Allocation')))!;
      const seen: number[] = [];
      fake.replay(recorded.stream, {
        immediate: true,
        fromIndex: firstIndex(recorded),
        rewriteLine: (line, index) => {
          seen.push(index);
          return index === bad ? 'not a batch' : line;
        },
      });
      expect(new Set(seen)).toEqual(new Set(all));
      for (let subscription = 0; subscription < 2; subscription++) {
        const stream = await openStream(fake, `?index=${bad}`);
        await until(clock, () => stream.lines.length >= 3, 'replayed lines');
        stream.close();
        expect(stream.lines[0]).toBe('{}');
        expect(stream.lines[1]).toBe('not a batch');
        expect(JSON.parse(stream.lines[2]!)).toMatchObject({ Index: all[all.indexOf(bad) + 1] });
      }
      const allocation = batchOf(recorded.stream.find((l) => !isHeartbeatLine(l) && batchOf(l).Index === bad)!).Events.find((e) => e.Topic === 'Allocation')!;
      const answer = await call(fake.address, 'GET', `/v1/allocation/${allocation.Key}`);
      expect((JSON.parse(answer.text) as { ModifyIndex: number }).ModifyIndex).toBeGreaterThanOrEqual(bad);
    } finally {
      await fake.close();
    }
  });
});
