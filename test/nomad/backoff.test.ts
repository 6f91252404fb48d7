import fc from 'fast-check';
import { backoffDelay } from '../../src/nomad/backoff.js';
import { nextQueryIndex } from '../../src/nomad/blockingQuery.js';
import { AllocationFreshness } from '../../src/nomad/freshness.js';
import { resyncScope } from '../../src/nomad/resync.js';

describe('backoffDelay', () => {
  it('stays within [ceiling/2, ceiling] with the ceiling doubling up to the maximum', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempt, r) => {
        const ceiling = Math.min(30_000, 500 * 2 ** (attempt - 1));
        const delay = backoffDelay(attempt, { random: () => r });
        expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
        expect(delay).toBeLessThanOrEqual(ceiling);
      }),
      { seed: 11 },
    );
  });

  it('is a function of the injected random source', () => {
    expect(backoffDelay(3, { random: () => 0 })).toBe(1000);
    expect(backoffDelay(3, { random: () => 0.5 })).toBe(1500);
    expect(backoffDelay(1, { initialMs: 100, random: () => 0.999 })).toBeCloseTo(99.95);
  });
});

describe('nextQueryIndex', () => {
  it('follows the answered index and restarts from 0 when it goes backwards', () => {
    expect(nextQueryIndex(0, 297)).toBe(297);
    expect(nextQueryIndex(297, 297)).toBe(297);
    expect(nextQueryIndex(297, 310)).toBe(310);
    expect(nextQueryIndex(297, 12)).toBe(0);
  });
});

describe('AllocationFreshness', () => {
  it('admits only versions newer than every one delivered', () => {
    const freshness = new AllocationFreshness();
    expect(freshness.admit('a', 10)).toBe(true);
    expect(freshness.admit('a', 10)).toBe(false);
    expect(freshness.admit('a', 9)).toBe(false);
    expect(freshness.admit('b', 3)).toBe(true);
    expect(freshness.admit('a', 11)).toBe(true);
    expect(freshness.known('a')).toBe(11);
  });

  it('forgets allocations a full listing no longer shows, and only those', () => {
    const freshness = new AllocationFreshness();
    freshness.admit('a', 1);
    freshness.admit('b', 2);
    freshness.retainOnly(new Set(['b', 'c']));
    expect(freshness.known('a')).toBeUndefined();
    expect(freshness.known('b')).toBe(2);
    expect(freshness.size).toBe(1);
  });

  it('is bounded: an allocation not updated while a generation of others were is forgotten, the rest still guarded', () => {
    const freshness = new AllocationFreshness(2);
    freshness.admit('a', 1);
    freshness.admit('b', 2);
    freshness.admit('c', 3);
    // A full generation (a, b) is kept whole beside the new one.
    expect([freshness.known('a'), freshness.known('b'), freshness.known('c')]).toEqual([1, 2, 3]);
    expect(freshness.admit('a', 1)).toBe(false);
    // Updated again: it moves to the newest generation.
    expect(freshness.admit('a', 4)).toBe(true);
    freshness.admit('d', 5);
    expect([freshness.known('a'), freshness.known('b'), freshness.known('c'), freshness.known('d')]).toEqual([4, undefined, 3, 5]);
    expect(freshness.size).toBe(3);
    for (let i = 0; i < 1_000; i++) freshness.admit(`x${i}`, 10 + i);
    expect(freshness.size).toBeLessThanOrEqual(4);
    expect(freshness.admit('x999', 1_009)).toBe(false);
    expect(() => new AllocationFreshness(0)).toThrow(RangeError);
  });
});

describe('resyncScope', () => {
  it('derives the allocations to list from the topics', () => {
    expect(resyncScope(['Job', 'Evaluation'])).toEqual({ kind: 'none' });
    expect(resyncScope(['Allocation'])).toEqual({ kind: 'all' });
    expect(resyncScope(['*'])).toEqual({ kind: 'all' });
    expect(resyncScope(['Allocation:*', 'Job:web'])).toEqual({ kind: 'all' });
    expect(resyncScope(['Allocation:web', 'Allocation:api', 'Evaluation:web'])).toEqual({ kind: 'jobs', jobIds: ['web', 'api'] });
  });
});
