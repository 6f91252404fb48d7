/**
 * The cluster's release when Nomad cannot be reached at first: asked again with back-off (the
 * allocations wait), so that an agent still starting does not set today's rules for the whole run;
 * a refusal is not asked again.
 */
import { VirtualClock } from '../../src/clock/index.js';
import { ClusterRelease } from '../../src/intake/clusterRelease.js';
import { silentLogger } from '../../src/logger.js';
import { NomadConnectionError, NomadHttpError } from '../../src/nomad/errors.js';
import type { NomadClient } from '../../src/nomad/client.js';
import { settle } from '../../src/clock/settle.js';

type Reads = Pick<NomadClient, 'agentSelf' | 'agentMembers' | 'listNodes'>;
const meta = { lastIndex: 1, knownLeader: true, lastContactMs: 0 };

/** A Nomad whose every read fails with `failure()` for the first `failing` rounds, then answers 1.1.2. */
function nomadFailing(failing: number, failure: (path: string) => Error): Reads & { rounds: () => number } {
  let rounds = 0;
  const fail = (path: string) => async (): Promise<never> => {
    throw failure(path);
  };
  return {
    rounds: () => rounds,
    agentSelf: async () => {
      rounds++;
      if (rounds <= failing) throw failure('/v1/agent/self');
      return { body: { config: { Version: { Version: '1.1.2' } } }, meta } as never;
    },
    agentMembers: fail('/v1/agent/members') as never,
    listNodes: fail('/v1/nodes') as never,
  };
}
const unreachable = (path: string): Error => new NomadConnectionError('GET', path, new Error('connect ECONNREFUSED 127.0.0.1:4646'));

async function runFor(clock: VirtualClock, ms: number): Promise<void> {
  for (let passed = 0; passed < ms; passed += 250) {
    await settle(3);
    clock.advance(250);
  }
  await settle(3);
}

test('Nomad unreachable at first: asked again with back-off, the rules those of the release it then tells, no warning', async () => {
  const clock = new VirtualClock();
  const nomad = nomadFailing(2, unreachable);
  const warnings: string[] = [];
  const release = new ClusterRelease({ nomad, clock, random: () => 0.5, logger: silentLogger, warn: (message) => warnings.push(message) });
  let known: string | undefined;
  void release.whenKnown().then((rules) => (known = rules.version));
  await runFor(clock, 200);
  expect(known).toBeUndefined();
  await runFor(clock, 5_000);
  expect(nomad.rounds()).toBe(3);
  expect(known).toBe('1.1.2');
  expect(warnings).toEqual([]);
  release.close();
});

test('unreachable for every attempt: today\'s rules at last, with a warning naming why', async () => {
  const clock = new VirtualClock();
  const nomad = nomadFailing(Number.POSITIVE_INFINITY, unreachable);
  const warnings: string[] = [];
  const release = new ClusterRelease({ nomad, clock, random: () => 0.5, logger: silentLogger, warn: (message) => warnings.push(message) });
  await runFor(clock, 60_000);
  expect(nomad.rounds()).toBe(5);
  expect(release.rules?.version).toBeDefined();
  expect(warnings).toEqual([expect.stringMatching(/^Nomad's version could not be read \(agent\/self: .*ECONNREFUSED.*\): judging by the rules of Nomad/)]);
  release.close();
});

test('refused (a token without agent:read or node:read): not asked again, today\'s rules with a warning at once', async () => {
  const clock = new VirtualClock();
  const nomad = nomadFailing(Number.POSITIVE_INFINITY, (path) => new NomadHttpError(403, 'GET', path, 'Permission denied'));
  const warnings: string[] = [];
  const release = new ClusterRelease({ nomad, clock, logger: silentLogger, warn: (message) => warnings.push(message) });
  await runFor(clock, 30_000);
  expect(nomad.rounds()).toBe(1);
  expect(warnings).toHaveLength(1);
  expect(release.rules).toBeDefined();
  release.close();
});

test('closed while waiting to ask again: no timer left behind', async () => {
  const clock = new VirtualClock();
  const release = new ClusterRelease({ nomad: nomadFailing(Number.POSITIVE_INFINITY, unreachable), clock, random: () => 0.5, logger: silentLogger });
  await runFor(clock, 100);
  release.close();
  expect(clock.nextDue()).toBeUndefined();
});
