/**
 * A pool's life recorded on a real Nomad 1.1.2 (test/fixtures/nomad-1.1.2/pool-life, its README),
 * replayed with no server: the pools reach, step by step, the states they reached live; and the
 * recording itself shows Poseidon's layout as Nomad stored it (template and runner jobs, the used mark
 * as an in-place update of the runner's job).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseTrafficRecording } from '../../src/nomad/recording/format.js';
import type { Job } from '../../src/nomad/types.js';
import type { PoolLife } from './support/poolLife.js';
import { POOL_LIFE_FIXTURE, replayPoolLife } from './support/poolLifeReplay.js';

const text = readFileSync(join(POOL_LIFE_FIXTURE, 'recording.ndjson'), 'utf8');
const life = JSON.parse(readFileSync(join(POOL_LIFE_FIXTURE, 'life.json'), 'utf8')) as PoolLife;

interface StreamEvent {
  Topic: string;
  Type: string;
  Payload: { Job?: Job; Evaluation?: { JobID: string; TriggeredBy: string } };
}

/** The events of the recorded event stream. */
function streamEvents(): StreamEvent[] {
  const recording = parseTrafficRecording(text);
  const chunks = recording.entries.flatMap((entry) => (entry.type === 'chunk' ? [entry.text] : [])).join('');
  return chunks
    .split('\n')
    .filter((line) => line.trim().startsWith('{"Index"'))
    .flatMap((line) => (JSON.parse(line) as { Events?: StreamEvent[] }).Events ?? []);
}

const jobEvents = (): { Type: string; Job: Job }[] =>
  streamEvents().flatMap((event) => (event.Topic === 'Job' && event.Payload.Job !== undefined ? [{ Type: event.Type, Job: event.Payload.Job }] : []));

describe('a pool life recorded on a real Nomad', () => {
  jest.setTimeout(60_000);

  it('replays to the same pool states, step by step, asking nothing the recording has no answer to', async () => {
    const replayed = await replayPoolLife(text, life);
    expect(replayed.steps.map((s) => [s.name, s.state])).toEqual(life.steps.map((s) => [s.name, s.state]));
    expect(replayed.misses).toEqual([]);
    const again = await replayPoolLife(text, life);
    expect(again.steps).toEqual(replayed.steps);
  });

  it("shows Poseidon's layout as Nomad stored it", () => {
    const id = life.environmentId;
    const events = jobEvents();
    const template = events.find((e) => e.Job.ID === `template-${id}`)?.Job;
    expect(template?.TaskGroups?.map((g) => [g.Name, g.Count])).toEqual([['default-group', 1], ['config', 0]]);
    expect(template?.TaskGroups?.[1]?.Meta).toEqual({ used: 'false', prewarmingPoolSize: '2' });
    // The runner kept (claimed in step 3): registered unused at version 0, marked used by an update (version 1).
    const kept = Object.entries(life.steps[2]!.state.runners).find(([, state]) => state === 'used')![0];
    const versions = events.filter((e) => e.Job.ID === kept && e.Type === 'JobRegistered').map((e) => [e.Job.Version, e.Job.TaskGroups?.find((g) => g.Name === 'config')?.Meta]);
    expect(versions).toEqual(expect.arrayContaining([[0, { used: 'false' }], [1, { used: 'true', timeout: '0' }]]));
    // Every runner job and the template purged at the end: Nomad 1.1.2 says so with the purge's
    // evaluation (JobDeregistered on the Evaluation topic), not with a Job event.
    expect(events.filter((e) => e.Type === 'JobDeregistered')).toEqual([]);
    const deregistered = new Set(streamEvents().flatMap((e) => (e.Topic === 'Evaluation' && e.Payload.Evaluation?.TriggeredBy === 'job-deregister' ? [e.Payload.Evaluation.JobID] : [])));
    for (const step of life.steps) for (const runner of Object.keys(step.state.runners)) expect(deregistered).toContain(runner);
    expect(deregistered).toContain(`template-${id}`);
  });
});
