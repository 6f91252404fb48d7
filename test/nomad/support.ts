/** Helpers for tests that run real loopback sockets on a VirtualClock. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { settle, type VirtualClock } from '../../src/clock/index.js';
import { parseNomadJson } from '../../src/nomad/json.js';
import type { Job } from '../../src/nomad/types.js';

export const fixtures = join(__dirname, '..', 'fixtures', 'nomad-1.1.2');

export function scenarioJob(scenario: string, file = 'job.json'): Job {
  return parseNomadJson(readFileSync(join(fixtures, 'scenarios', scenario, file), 'utf8')) as Job;
}

/**
 * Lets I/O run and moves virtual time in `stepMs` steps until `done()` holds. Fails after `maxMs`
 * of virtual time, so a test that cannot reach its condition fails instead of hanging.
 */
export async function until(clock: VirtualClock, done: () => boolean, what: string, { stepMs = 100, maxMs = 300_000 } = {}): Promise<void> {
  const deadline = clock.now() + maxMs;
  for (;;) {
    // A loopback round trip takes a handful of event-loop turns, more on a loaded machine: give
    // I/O plenty before time moves, or virtual deadlines could pass while bytes are in flight.
    await settle(12);
    if (done()) return;
    if (clock.now() >= deadline) throw new Error(`not reached within ${maxMs} virtual ms: ${what}`);
    clock.advance(stepMs);
  }
}

/** Awaits a promise while moving virtual time (a request whose answer depends on the clock). */
export async function resolveWhile<T>(clock: VirtualClock, promise: Promise<T>, what: string, options?: { stepMs?: number; maxMs?: number }): Promise<T> {
  let outcome: { value: T } | { error: unknown } | undefined;
  promise.then(
    (value) => (outcome = { value }),
    (error: unknown) => (outcome = { error }),
  );
  await until(clock, () => outcome !== undefined, what, options);
  if (outcome === undefined) throw new Error(what);
  if ('error' in outcome) throw outcome.error;
  return outcome.value;
}
