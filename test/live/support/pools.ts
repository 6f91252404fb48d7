/** Waiting on runner pools in a live suite: on their own changes, never on a fixed sleep (Jest's timeout bounds it). */
import type { RunnerPools } from '../../../src/runners/pools.js';

/** Resolves once `done()` holds, looked at again on each change of the pools. */
export function until(pools: RunnerPools, done: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    if (done()) return resolve();
    const subscription = pools.changes$.subscribe(() => {
      if (done()) {
        subscription.unsubscribe();
        resolve();
      }
    });
  });
}
