/**
 * Job purge on Nomad 2.x: JobDeregistered with `Deleted: true` (nomad-protocol §2.5, §10). A job
 * registered again under a purged ID starts over at version 0 with another spec: the cache must
 * not answer with the purged one.
 */
import { concatMap, firstValueFrom, filter, take, toArray } from 'rxjs';
import { VirtualClock } from '../../src/clock/index.js';
import { NomadClient } from '../../src/nomad/client.js';
import { isJobEvent } from '../../src/nomad/eventFrames.js';
import { nomadEventStream } from '../../src/nomad/eventStream.js';
import type { JobEvent } from '../../src/nomad/types.js';
import { JobCache, isJobPurge } from '../../src/streams/jobCache.js';
import { nomadSource } from '../../src/supervisor/nomadSource.js';
import { resolveScope } from '../../src/intake/scope.js';
import { eachInput } from '../../src/supervisor/inputs.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { serviceJob } from '../testing/helpers.js';
import { fixtures, resolveWhile, until } from '../nomad/support.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

async function setUp(version: '1.1.2' | '2.0') {
  const clock = new VirtualClock({ start: 1_795_971_900_000 });
  const fake = await FakeNomad.start({ clock, version, exec: false });
  const client = new NomadClient({ address: fake.address }, { clock, gzip: false });
  return { clock, fake, client, close: async () => (await client.close(), await fake.close()) };
}

const spec = (flavour: string) => serviceJob('web', { Meta: { flavour } });

describe('a purged job', () => {
  it('FakeNomad 2.0 publishes JobDeregistered with Deleted: true and the job as it was; 1.1.2 publishes no Job event', async () => {
    for (const [version, expected] of [['2.0', [{ type: 'JobDeregistered', deleted: true, flavour: 'A' }]], ['1.1.2', []]] as const) {
      const env = await setUp(version);
      env.fake.cluster.registerJob(spec('A'));
      env.fake.cluster.deregisterJob('web', { purge: true });
      const purges = env.fake.broker
        .replayFrom(0)
        .flatMap((b) => b.Events)
        .filter((e) => e.Topic === 'Job' && e.Type === 'JobDeregistered')
        .map((e) => ({ type: e.Type, deleted: (e.Payload as { Deleted?: boolean }).Deleted, flavour: (e.Payload as { Job: { Meta: { flavour: string } } }).Job.Meta.flavour }));
      expect([version, purges]).toEqual([version, expected]);
      await env.close();
    }
  });

  it('is forgotten by the job cache: the same ID registered again is asked for, not answered with the purged spec', async () => {
    const env = await setUp('2.0');
    env.fake.cluster.registerJob(spec('A'));
    const events: JobEvent[] = [];
    const stream = nomadEventStream(env.client, { topics: ['Job'], clock: env.clock });
    const subscription = stream.batches.subscribe((b) => events.push(...b.events.filter(isJobEvent)));
    const cache = new JobCache(env.client, { clock: env.clock });
    const stale = new JobCache(env.client, { clock: env.clock });
    for (const target of [cache, stale]) {
      expect((await resolveWhile(env.clock, target.get('default', 'web', 0), 'first lookup')).Meta).toEqual({ flavour: 'A' });
    }

    env.fake.cluster.deregisterJob('web', { purge: true });
    await until(env.clock, () => events.some((e) => e.Payload.Deleted === true), 'purge event');
    const purge = events.find((e) => e.Payload.Deleted === true)!;
    cache.observe(purge);
    env.fake.cluster.registerJob(spec('B'));

    // Only the purge was seen (the new registration's event not yet): version 0 is B's now.
    expect((await resolveWhile(env.clock, cache.get('default', 'web', 0), 'after purge')).Meta).toEqual({ flavour: 'B' });
    // Without the purge event, the old spec would still be served for version 0.
    expect((await resolveWhile(env.clock, stale.get('default', 'web', 0), 'stale')).Meta).toEqual({ flavour: 'A' });
    subscription.unsubscribe();
    await env.close();
  });

  it('reaches the supervisor as a job input marked deleted', async () => {
    const env = await setUp('2.0');
    env.fake.cluster.registerJob(spec('A'));
    env.fake.cluster.deregisterJob('web', { purge: true });
    const jobs = await resolveWhile(
      env.clock,
      firstValueFrom(
        nomadSource(env.client, resolveScope(), env.clock).pipe(
          concatMap(eachInput),
          filter((input) => input.kind === 'job'),
          take(2),
          toArray(),
        ),
      ),
      'two job inputs',
    );
    expect(jobs.map((input) => (input.kind === 'job' ? input.deleted === true : null))).toEqual([false, true]);
    await env.close();
  });
});

describe('isJobPurge', () => {
  /** Every Job event of a recording, decoded from its raw lines. */
  const recordedJobEvents = (scenario: string): JobEvent[] =>
    readFileSync(join(fixtures, 'scenarios', scenario, 'stream.jsonl'), 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => (JSON.parse(line) as { raw: string }).raw)
      .filter((raw) => raw !== '{}')
      .flatMap((raw) => (JSON.parse(raw) as { Events: JobEvent[] }).Events)
      .filter((event) => event.Topic === 'Job');

  it('a stop (Nomad 1.1.2 recording: the job written at the event\'s index) and registrations are not purges', () => {
    const events = recordedJobEvents('stopped_while_waiting');
    expect(events.map((e) => e.Type)).toContain('JobDeregistered');
    expect(events.filter(isJobPurge)).toEqual([]);
  });

  it('Nomad 1.8+: JobDeregistered carrying the job as last written before the event is a purge, Deleted flag or not', () => {
    const [stop] = recordedJobEvents('stopped_while_waiting').filter((e) => e.Type === 'JobDeregistered');
    const later = { ...stop!, Index: stop!.Index + 3 };
    expect(isJobPurge(later)).toBe(true);
    expect(isJobPurge({ ...stop!, Payload: { ...stop!.Payload, Deleted: true } })).toBe(true);
    expect(isJobPurge({ ...later, Type: 'JobRegistered' })).toBe(false);
  });
});
