import { config } from 'rxjs';
import { VirtualClock } from '../../src/clock/index.js';
import { NomadClient } from '../../src/nomad/client.js';
import { nomadEventStream } from '../../src/nomad/eventStream.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { listScenarios } from '../../src/testing/recording.js';
import { fixtures, until } from '../nomad/support.js';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { STREAM_TOPICS, recordedFinals, recordedOthers, replayThroughStream, scenario } from './replayHarness.js';

const scenarios = listScenarios(join(fixtures, 'scenarios'));

describe('resumable event stream, fault-free', () => {
  it.each(scenarios)('%s: delivers the final recorded state of every allocation, in index order', async (name) => {
    const recorded = scenario(name);
    const run = await replayThroughStream(recorded);
    expect(run.finals).toEqual(recordedFinals(recorded));
    expect(run.others).toEqual(recordedOthers(recorded));
    expect(run.regressions).toEqual([]);
    const indexes = run.batches.map((b) => b.index);
    expect(indexes).toEqual([...indexes].sort((a, b) => a - b));
  });
});

/** `losesOthers`: a reordered frame arrives below the last index, so only its allocation updates are kept. */
type Fault = { name: string; install: (fake: FakeNomad) => void; expectReconnect: boolean; losesOthers?: boolean };

const FAULTS: Fault[] = [
  { name: 'connection cut after 3 events', install: (f) => void f.faults.stream({ cutAfterEvents: 3 }), expectReconnect: true },
  { name: 'truncated line after 5 events', install: (f) => void f.faults.stream({ truncateAfterEvents: 5 }), expectReconnect: true },
  { name: 'stall after 4 events (idle timeout)', install: (f) => void f.faults.stream({ stallAfterEvents: 4 }), expectReconnect: true },
  { name: "Nomad's raw error text after 6 events", install: (f) => void f.faults.stream({ errorAfterEvents: 6 }), expectReconnect: true },
  { name: 'every 2nd batch repeated', install: (f) => void f.faults.stream({ repeatEvery: 2 }), expectReconnect: false },
  { name: 'every 3rd batch reordered', install: (f) => void f.faults.stream({ reorderEvery: 3 }), expectReconnect: false, losesOthers: true },
  {
    name: 'cut, then connections refused twice, then a 500',
    install: (f) => {
      f.faults.stream({ cutAfterEvents: 2 });
      f.faults.refuseConnections(2);
      f.faults.failRequests({ status: 500, path: '/v1/event/stream', times: 1 });
    },
    expectReconnect: true,
  },
  {
    name: 'cut, and the resync listing fails once with a 500',
    install: (f) => {
      f.faults.stream({ cutAfterEvents: 8 });
      f.faults.failRequests({ status: 500, path: '/v1/allocation', times: 1 });
    },
    expectReconnect: true,
  },
];

describe('resumable event stream under each fault switch', () => {
  describe.each(['rolling_update', 'many_allocs'])('%s', (name) => {
    it.each(FAULTS)('$name: same final allocation states, never an older version', async ({ install, expectReconnect, losesOthers }) => {
      const recorded = scenario(name);
      const run = await replayThroughStream(recorded, install);
      expect(run.finals).toEqual(recordedFinals(recorded));
      if (!losesOthers) expect(run.others).toEqual(recordedOthers(recorded));
      expect(run.regressions).toEqual([]);
      const statuses = run.states.map((s) => s.status);
      if (expectReconnect) {
        expect(statuses).toContain('backingOff');
        expect(statuses).toContain('resyncing');
      }
    });
  });

  it('shows its connection state: connecting, streaming, backing off with the retry time, resyncing', async () => {
    const recorded = scenario('failed_task');
    const run = await replayThroughStream(recorded, (f) => void f.faults.stream({ cutAfterEvents: 1 }));
    const sequence = run.states.map((s) => s.status).filter((s, i, all) => s !== all[i - 1]);
    expect(sequence.slice(0, 3)).toEqual(['stopped', 'connecting', 'streaming']);
    const backingOff = run.states.find((s) => s.status === 'backingOff')!;
    expect(backingOff.failures).toBe(1);
    expect(backingOff.retryAt).toBeGreaterThan(0);
    expect(backingOff.error?.message).toMatch(/connection|closed|socket|terminated/i);
    const after = sequence.slice(sequence.indexOf('backingOff'));
    expect(after.slice(0, 4)).toEqual(['backingOff', 'connecting', 'resyncing', 'streaming']);
  });
});

describe('list, then watch', () => {
  it('recovers updates that fell out of Nomad\'s event buffer during an outage by listing the allocations', async () => {
    const recorded = scenario('many_allocs');
    // Buffer of 2 batches; cut early, then refuse long enough for the replay to run past the buffer.
    const run = await replayThroughStream(
      recorded,
      (fake) => {
        fake.faults.stream({ cutAfterEvents: 1 });
        fake.faults.refuseConnections(6);
      },
      { backoff: { initialMs: 2_000, maxMs: 8_000, random: () => 0.5 } },
      { eventBufferSize: 2 },
    );
    expect(run.finals).toEqual(recordedFinals(recorded));
    expect(run.regressions).toEqual([]);
    const resynced = run.batches.filter((b) => b.resync).flatMap((b) => b.events);
    expect(resynced.length).toBeGreaterThan(0);
    expect(resynced.every((e) => e.Type === 'Resync' && e.Topic === 'Allocation')).toBe(true);
    // Some final versions reached us only through the listing: the stream itself never sent them.
    const streamed = new Set(run.batches.filter((b) => !b.resync).flatMap((b) => b.events.map((e) => `${e.Key}@${e.Index}`)));
    const onlyListed = resynced.filter((e) => !streamed.has(`${e.Key}@${e.Index}`));
    expect(onlyListed.length).toBeGreaterThan(0);
  });
});

describe('stream transport options', () => {
  it('reads a gzip-compressed stream, cut and resumed, to the same final states', async () => {
    const recorded = scenario('rolling_update');
    const run = await replayThroughStream(recorded, (f) => void f.faults.stream({ cutAfterEvents: 4 }), { gzip: true });
    expect(run.finals).toEqual(recordedFinals(recorded));
    expect(run.others).toEqual(recordedOthers(recorded));
    expect(run.states.map((s) => s.status)).toContain('backingOff');
  });

  it('subscribes across namespaces with namespace "*" (Nomad 1.2+ semantics)', async () => {
    const recorded = scenario('healthy_task_states');
    const run = await replayThroughStream(recorded, () => undefined, { namespace: '*' }, { namespaceWildcard: true });
    expect(run.finals).toEqual(recordedFinals(recorded));
  });

  it('passes the namespace to Nomad: another namespace sees none of the events', async () => {
    const recorded = scenario('healthy_task_states');
    const run = await replayThroughStream(recorded, () => undefined, { namespace: 'other' }, {}, { waitFor: 'replay' });
    expect(run.states.map((s) => s.status)).toContain('streaming');
    expect(run.finals.size).toBe(0);
    expect(run.others.size).toBe(0);
  });
});

describe('starting index ("closest batch" answers)', () => {
  async function delivered(recordedName: string, index: (indexes: number[]) => number): Promise<{ indexes: number[]; got: number[] }> {
    const recorded = scenario(recordedName);
    const clock = new VirtualClock({ start: 1_795_971_900_000 });
    const fake = await FakeNomad.start({ clock });
    fake.replay(recorded.stream, { immediate: true });
    const indexes = [...new Set(fake.broker.buffered().map((b) => b.Index))];
    const client = new NomadClient({ address: fake.address }, { clock });
    const got: number[] = [];
    const states: string[] = [];
    const stream = nomadEventStream(client, { topics: STREAM_TOPICS, index: index(indexes), clock });
    const s1 = stream.state.subscribe((s) => states.push(s.status));
    const s2 = stream.batches.subscribe((b) => got.push(b.index));
    try {
      await until(clock, () => states.includes('streaming'), 'connected');
      clock.advance(1_000);
      await until(clock, () => true, 'settled');
      return { indexes, got };
    } finally {
      s1.unsubscribe();
      s2.unsubscribe();
      await client.close();
      await fake.close();
    }
  }

  it('starts at the index asked for, inclusive, with every frame of that index', async () => {
    const { indexes, got } = await delivered('rolling_update', (all) => all[Math.floor(all.length / 2)]!);
    const from = indexes[Math.floor(indexes.length / 2)]!;
    expect(got[0]).toBe(from);
    expect(new Set(got)).toEqual(new Set(indexes.filter((i) => i >= from)));
  });

  it('delivers nothing from the stale batch Nomad replays for an index in the future', async () => {
    const { got } = await delivered('rolling_update', (all) => all.at(-1)! + 1_000);
    expect(got).toEqual([]);
  });

  it('replays the whole buffer from index 0', async () => {
    const { indexes, got } = await delivered('healthy_task_states', () => 0);
    expect(new Set(got)).toEqual(new Set(indexes));
  });
});

describe('unsubscribing', () => {
  it('closes the stream connection (and its timers), and a new subscriber resumes after the last index', async () => {
    const clock = new VirtualClock({ start: 1_795_971_900_000 });
    const fake = await FakeNomad.start({ clock });
    const client = new NomadClient({ address: fake.address }, { clock });
    // Sockets as the server sees them: the stream's must close (undici may open a fresh idle one).
    const sockets = new Set<Socket>();
    fake.server.on('connection', (socket: Socket) => sockets.add(socket));
    const recorded = scenario('failed_task');
    const stream = nomadEventStream(client, { topics: STREAM_TOPICS, clock });
    const states: string[] = [];
    const indexes: number[] = [];
    stream.state.subscribe((s) => states.push(s.status));
    try {
      fake.replay(recorded.stream.slice(0, 6), { immediate: true });
      const first = stream.batches.subscribe((b) => indexes.push(b.index));
      await until(clock, () => states.includes('streaming') && indexes.length > 0, 'streaming');
      const open = [...sockets];
      expect(open.length).toBeGreaterThan(0);
      first.unsubscribe();
      await until(clock, () => states.at(-1) === 'stopped' && open.every((socket) => socket.destroyed), 'stream socket closed', { maxMs: 5_000 });
      expect(clock.pending()).toBeLessThanOrEqual(1); // FakeNomad's own heartbeat timer at most

      const seenBefore = indexes.at(-1)!;
      fake.replay(recorded.stream.slice(6), { immediate: true });
      const second = stream.batches.subscribe((b) => indexes.push(b.index));
      await until(clock, () => indexes.at(-1)! > seenBefore, 'resumed');
      second.unsubscribe();
      const resumed = indexes.slice(indexes.indexOf(seenBefore) + 1);
      expect(resumed.every((i) => i > seenBefore)).toBe(true);
    } finally {
      await client.close();
      await fake.close();
    }
  });
});

describe('following by plain calls', () => {
  it('shares one connection with the batches subscribers; a follower that throws is reported as RxJS reports a subscriber, and the stream goes on', async () => {
    const clock = new VirtualClock({ start: 1_795_971_900_000 });
    const fake = await FakeNomad.start({ clock });
    const client = new NomadClient({ address: fake.address }, { clock });
    const recorded = scenario('failed_task');
    fake.replay(recorded.stream, { immediate: true });
    const expected = new Set(fake.broker.buffered().map((b) => b.Index));
    const stream = nomadEventStream(client, { topics: STREAM_TOPICS, clock });
    const states: string[] = [];
    const followed: number[] = [];
    const subscribed: number[] = [];
    const reported: unknown[] = [];
    const before = config.onUnhandledError;
    config.onUnhandledError = (error) => reported.push(error);
    const subscriptions = [
      stream.state.subscribe((s) => states.push(s.status)),
      stream.follow(
        () => {
          throw new Error('a bug downstream');
        },
        () => undefined,
      ),
      stream.follow((b) => followed.push(b.index), () => undefined),
      stream.batches.subscribe((b) => subscribed.push(b.index)),
    ];
    try {
      await until(clock, () => new Set(followed).size === expected.size, 'every batch followed');
      expect(new Set(followed)).toEqual(expected);
      expect(subscribed).toEqual(followed);
      expect(reported).toHaveLength(followed.length);
      expect(reported.every((error) => error instanceof Error && error.message === 'a bug downstream')).toBe(true);
      expect(states.filter((s) => s === 'connecting')).toHaveLength(1);
      expect(states).not.toContain('backingOff');
    } finally {
      config.onUnhandledError = before;
      for (const subscription of subscriptions) subscription.unsubscribe();
      await client.close();
      await fake.close();
    }
  });
});
