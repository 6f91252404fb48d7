/** Properties of the event buffer and the stream faults, over generated inputs (seeded). */
import { fc } from '@fast-check/jest';
import { EventBroker, type EventBatch } from '../../src/testing/nomad/eventBroker.js';
import { StreamFaultState } from '../../src/testing/nomad/faults.js';

const SEED = { seed: 20261129, numRuns: 300 };

/** Batches with non-decreasing indexes; equal neighbours are items Nomad publishes at one index. */
const batchIndexes = fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 40 }).map((steps) => {
  let index = 10;
  return steps.map((step) => (index += step));
});

function batch(index: number, n: number): EventBatch {
  return { Index: index, Events: [{ Topic: 'Job', Type: 'JobRegistered', Key: `k${n}`, Namespace: 'default', FilterKeys: null, Index: index, Payload: {} }] };
}

describe('EventBroker.replayFrom', () => {
  it('starts at the head for an old index, at the first item of an exact index, else at the last item below', () => {
    fc.assert(
      fc.property(batchIndexes, fc.integer({ min: 0, max: 200 }), fc.integer({ min: 1, max: 10 }), (indexes, wanted, size) => {
        const broker = new EventBroker(size);
        indexes.forEach((index, n) => broker.publish(batch(index, n)));
        const buffered = broker.buffered();
        expect(buffered.length).toBe(Math.min(indexes.length, size + 1));
        const replayed = broker.replayFrom(wanted);
        // Always a suffix of the buffer, ending with the newest item.
        expect(replayed).toEqual(buffered.slice(buffered.length - replayed.length));
        expect(replayed.length).toBeGreaterThan(0);
        const first = replayed[0]!;
        const before = buffered[buffered.length - replayed.length - 1];
        if (wanted <= buffered[0]!.Index) expect(replayed).toEqual(buffered);
        else if (buffered.some((b) => b.Index === wanted)) {
          expect(first.Index).toBe(wanted);
          expect(before?.Index).not.toBe(wanted);
        } else {
          expect(first.Index).toBeLessThan(wanted);
          expect(replayed[1] === undefined || replayed[1].Index > wanted).toBe(true);
        }
      }),
      SEED,
    );
  });
});

describe('stream faults that repeat or reorder', () => {
  it('lose nothing and invent nothing: every line is delivered, at least once, and only those', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.record({
          repeatEvery: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
          reorderEvery: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
          repeatProbability: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
          reorderProbability: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
          seed: fc.integer(),
        }),
        (count, plan) => {
          const state = new StreamFaultState(plan);
          const lines = Array.from({ length: count }, (_, i) => `line ${i}`);
          const written = lines.flatMap((line) => state.onLine(line, 1).write);
          // A line held back for reordering goes out with the next one; the last may still be held.
          const held = lines.filter((line) => !written.includes(line));
          expect(held.length).toBeLessThanOrEqual(1);
          expect(new Set(written)).toEqual(new Set(lines.filter((line) => !held.includes(line))));
        },
      ),
      SEED,
    );
  });
});
