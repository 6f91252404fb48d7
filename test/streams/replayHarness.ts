/**
 * Replays a recorded scenario from FakeNomad (on a VirtualClock) through the resumable event
 * stream, and collects what the stream delivered. Also computes, straight from the recording,
 * the final state of every allocation: what a perfect stream must end with.
 */
import { join } from 'node:path';
import { VirtualClock } from '../../src/clock/index.js';
import { seededRandom } from '../../src/random.js';
import { NomadClient } from '../../src/nomad/client.js';
import { decodeFrame, isAllocationEvent } from '../../src/nomad/eventFrames.js';
import { nomadEventStream, type EventBatch, type EventStreamOptions, type StreamState } from '../../src/nomad/eventStream.js';
import type { Allocation, NomadEvent } from '../../src/nomad/types.js';
import { FakeNomad, type FakeNomadOptions } from '../../src/testing/fakeNomad.js';
import type { ReplayOptions } from '../../src/testing/nomad/replay.js';
import { isHeartbeatLine, readScenario, type Scenario } from '../../src/testing/recording.js';
import { fixtures, until } from '../nomad/support.js';

export const STREAM_TOPICS = ['Job', 'Evaluation', 'Allocation', 'Deployment'];

/** What matters of an allocation's final state. */
export interface AllocationSummary {
  modifyIndex: number;
  clientStatus: string | undefined;
  desiredStatus: string | undefined;
  tasks: Record<string, string>;
}

function summary(allocation: Allocation): AllocationSummary {
  const tasks: Record<string, string> = {};
  for (const [name, state] of Object.entries(allocation.TaskStates ?? {})) {
    tasks[name] = `${state.State}${state.Failed ? ':failed' : ''}:${state.Restarts}`;
  }
  return { modifyIndex: allocation.ModifyIndex, clientStatus: allocation.ClientStatus, desiredStatus: allocation.DesiredStatus, tasks };
}

export function scenario(name: string): Scenario {
  return readScenario(join(fixtures, 'scenarios', name));
}

/** First index the scenario's own events have (the recording starts with one stale batch). */
export function firstIndex(recorded: Scenario): number {
  return recorded.meta.raft_index_before + 1;
}

function dataFrames(recorded: Scenario) {
  return recorded.stream
    .filter((line) => !isHeartbeatLine(line))
    .map((line) => decodeFrame(line.raw)!)
    .filter((frame) => frame.Index >= firstIndex(recorded));
}

/** The last recorded version of every allocation. */
export function recordedFinals(recorded: Scenario): Map<string, AllocationSummary> {
  const finals = new Map<string, AllocationSummary>();
  for (const frame of dataFrames(recorded)) {
    for (const event of frame.Events) if (isAllocationEvent(event)) finals.set(event.Key, summary(event.Payload.Allocation));
  }
  return finals;
}

function otherId(event: NomadEvent): string {
  return `${event.Topic}/${event.Key}/${event.Type}@${event.Index}`;
}

/** Every recorded event that is not an allocation update. */
export function recordedOthers(recorded: Scenario): Set<string> {
  return new Set(dataFrames(recorded).flatMap((frame) => frame.Events.filter((e) => !isAllocationEvent(e)).map(otherId)));
}

export function lastRecordedIndex(recorded: Scenario): number {
  return Math.max(...dataFrames(recorded).map((frame) => frame.Index));
}

export function recordedEventCount(recorded: Scenario): number {
  return dataFrames(recorded).reduce((n, frame) => n + frame.Events.length, 0);
}

export interface ReplayRun {
  finals: Map<string, AllocationSummary>;
  batches: EventBatch[];
  states: StreamState[];
  /** Every other event delivered, as Topic/Key/Type@Index. */
  others: Set<string>;
  /** Violations seen while collecting: an older allocation version after a newer one, another event twice or out of order. */
  regressions: string[];
}


export async function replayThroughStream(
  recorded: Scenario,
  setup: (fake: FakeNomad) => void = () => undefined,
  options: Partial<EventStreamOptions> = {},
  fakeOptions: Omit<FakeNomadOptions, 'clock'> = {},
  { waitFor = 'lastIndex', replay = {} }: { waitFor?: 'lastIndex' | 'replay'; replay?: ReplayOptions } = {},
): Promise<ReplayRun> {
  const clock = new VirtualClock({ start: 1_795_971_900_000 });
  const fake = await FakeNomad.start({ ...fakeOptions, clock });
  const client = new NomadClient({ address: fake.address }, { clock });
  const run: ReplayRun = { finals: new Map(), batches: [], states: [], regressions: [], others: new Set() };
  const stream = nomadEventStream(client, {
    topics: STREAM_TOPICS,
    index: firstIndex(recorded),
    clock,
    backoff: { random: seededRandom(7) },
    ...options,
  });
  setup(fake);
  const stateSubscription = stream.state.subscribe((state) => run.states.push(state));
  let failure: unknown;
  let lastOther = 0;
  const subscription = stream.batches.subscribe({
    next: (batch) => {
      run.batches.push(batch);
      for (const event of batch.events) {
        if (!isAllocationEvent(event)) {
          const id = otherId(event);
          if (run.others.has(id) || event.Index < lastOther) run.regressions.push(`${id} delivered twice or out of order`);
          run.others.add(id);
          lastOther = event.Index;
          continue;
        }
        const allocation = event.Payload.Allocation;
        const before = run.finals.get(allocation.ID);
        if (before !== undefined && before.modifyIndex >= allocation.ModifyIndex) {
          run.regressions.push(`${allocation.ID}: ${allocation.ModifyIndex} after ${before.modifyIndex}`);
        }
        run.finals.set(allocation.ID, summary(allocation));
      }
    },
    error: (error: unknown) => (failure = error),
  });
  try {
    let replayed = false;
    void fake.replay(recorded.stream, { fromIndex: firstIndex(recorded), ...replay }).done.then(() => (replayed = true));
    const last = lastRecordedIndex(recorded);
    await until(
      clock,
      () =>
        failure !== undefined ||
        (replayed && (waitFor === 'replay' || (run.states.at(-1)?.lastIndex === last && run.states.at(-1)?.status === 'streaming'))),
      `${recorded.name}: stream caught up with index ${last}`,
      { maxMs: 900_000, stepMs: 250 },
    );
    if (failure !== undefined) throw failure;
    return run;
  } finally {
    subscription.unsubscribe();
    stateSubscription.unsubscribe();
    await client.close();
    await fake.close();
  }
}
