/**
 * Writes a live scenario's traffic into its fixture folder (test/fixtures/nomad-1.1.2-live/
 * scenarios/<name>, beside its job.hcl), in the layout of the Nomad 1.1.2 recordings so that the
 * hermetic replay suites replay it as they replay those (see that folder's README):
 *
 *   recording.ndjson  the `warden record` of the watch from the start (job-scoped: this job's events only)
 *   watch.jsonl       the lines that watch printed, in order
 *   stream.jsonl      the event stream's lines as received ({t, raw}), cut from the recording
 *   job.json, job.vN.json  each version of the job, as Nomad keeps it (GET /v1/job/:id/versions)
 *   expected.json     what Nomad concluded, read at the end (allocations, deployments, evaluations)
 *   meta.json         the stream's query and opening time, and when the capture ended
 *
 * Only on request: `WARDEN_LIVE_FIXTURES=1 npm run test:live -- test/live/health.test.ts -t 'lack'`.
 */
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { systemClock } from '../../../src/clock/index.js';
import { readTrafficRecording, type ChunkEntry, type ResponseEntry } from '../../../src/nomad/recording/format.js';
import { parseLossless, stringifyLossless, type LosslessJson } from '../../../src/testing/losslessJson.js';
import type { ObservedAllocation } from './healthObserver.js';
import { liveAgents } from './live.js';

type Json = { [key: string]: LosslessJson };

async function readRaw(path: string): Promise<LosslessJson> {
  const response = await request(`${liveAgents().nomad}${path}`);
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`GET ${path}: ${response.statusCode} ${text}`);
  return parseLossless(text);
}

/** One line, int64 values exact (Nomad's JSON as the client decodes it). */
const pretty = (value: LosslessJson): string => `${stringifyLossless(value)}\n`;

/** The event stream's lines as received, with the time (ms after its response) of the chunk that completed each. */
function streamLines(recordingFile: string): { opened: number; query: string; lines: { t: number; raw: string }[]; closedT: number } {
  const recording = readTrafficRecording(recordingFile);
  const response = recording.entries.find((e): e is ResponseEntry => e.type === 'response' && e.path.startsWith('/v1/event/stream'));
  if (response === undefined) throw new Error(`${recordingFile}: no event stream`);
  const lines: { t: number; raw: string }[] = [];
  let pending = '';
  for (const entry of recording.entries) {
    if (entry.type !== 'chunk' || entry.id !== response.id) continue;
    const chunk = entry as ChunkEntry;
    pending += chunk.text;
    for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n')) {
      lines.push({ t: chunk.t - response.t, raw: pending.slice(0, end) });
      pending = pending.slice(end + 1);
    }
  }
  return { opened: recording.header.start + response.t, query: response.path, lines, closedT: recording.endsAt - recording.header.start - response.t };
}

const FIELDS = ['ID', 'Name', 'JobVersion', 'DeploymentID', 'ClientStatus', 'ClientDescription', 'DesiredStatus', 'DesiredDescription', 'DeploymentStatus'];
const LINKS = ['PreviousAllocation', 'NextAllocation', 'FollowupEvalID', 'RescheduleTracker', 'DesiredTransition'];

/** One allocation of expected.json: the API object's fields, Nomad's verdict, its Alloc Unhealthy events (as first seen on the stream) and its task states. */
function expectedAllocation(allocation: Json, seen: ObservedAllocation | undefined): Json {
  const out: Json = {};
  for (const field of FIELDS) out[field] = allocation[field] ?? null;
  // A single allocation's GET embeds its job instead of naming the version.
  out.JobVersion = (allocation.Job as Json | undefined)?.Version ?? null;
  const status = allocation.DeploymentStatus as Json | null | undefined;
  out.verdict = status?.Healthy === true ? 'healthy' : status?.Healthy === false ? 'unhealthy' : 'none';
  out.AllocUnhealthyEvents = [...(seen?.unhealthyEvents ?? new Map())].map(([task, event]) => ({
    Task: task,
    Type: 'Alloc Unhealthy',
    DisplayMessage: (event.DisplayMessage ?? null) as LosslessJson,
    Message: (event.Message ?? null) as LosslessJson,
    Time: event.Time as LosslessJson,
  }));
  for (const field of LINKS) out[field] = allocation[field] ?? null;
  const states = (allocation.TaskStates ?? {}) as Record<string, Json>;
  out.TaskStates_extra = Object.fromEntries(
    Object.entries(states).map(([task, state]) => [
      task,
      {
        State: state.State ?? null,
        Failed: state.Failed ?? null,
        Restarts: state.Restarts ?? null,
        StartedAt: state.StartedAt ?? null,
        FinishedAt: state.FinishedAt ?? null,
        Events: ((state.Events ?? []) as Json[]).map((event) => ({ Type: event.Type ?? null, DisplayMessage: event.DisplayMessage ?? null, Time: event.Time ?? null })),
      },
    ]),
  );
  return out;
}

export interface LiveFixtureRun {
  readonly name: string;
  readonly jobId: string;
  readonly recording: string;
  readonly printed: readonly string[];
  readonly observed: readonly ObservedAllocation[];
}

/** Writes `run` into `dir` (the scenario's fixture folder). */
export async function writeLiveFixture(dir: string, run: LiveFixtureRun): Promise<void> {
  const job = encodeURIComponent(run.jobId);
  const { opened, query, lines, closedT } = streamLines(run.recording);
  const capturedAt = systemClock.now();
  const stubs = (await readRaw(`/v1/job/${job}/allocations?all=true`)) as Json[];
  const allocations: Json[] = [];
  for (const stub of stubs) allocations.push((await readRaw(`/v1/allocation/${String(stub.ID)}`)) as Json);
  const deployments = (await readRaw(`/v1/job/${job}/deployments`)) as Json[];
  const evaluations = (await readRaw(`/v1/job/${job}/evaluations`)) as Json[];
  const versions = ((await readRaw(`/v1/job/${job}/versions`)) as Json).Versions as Json[];

  copyFileSync(run.recording, join(dir, 'recording.ndjson'));
  writeFileSync(join(dir, 'watch.jsonl'), run.printed.map((line) => `${line}\n`).join(''));
  writeFileSync(join(dir, 'stream.jsonl'), lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
  for (const version of versions) writeFileSync(join(dir, Number(version.Version) === 0 ? 'job.json' : `job.v${String(version.Version)}.json`), pretty(version));
  const byId = new Map(run.observed.map((seen) => [seen.latest.ID, seen]));
  const expected: Json = {
    scenario: run.name,
    job_id: run.jobId,
    captured_at: new Date(capturedAt).toISOString(),
    captured_at_stream_t: capturedAt - opened,
    allocations: allocations.map((allocation) => expectedAllocation(allocation, byId.get(String(allocation.ID)))),
    deployments: deployments.map((d) => ({ ID: d.ID ?? null, JobVersion: d.JobVersion ?? null, Status: d.Status ?? null, StatusDescription: d.StatusDescription ?? null, TaskGroups: d.TaskGroups ?? null, CreateIndex: d.CreateIndex ?? null, ModifyIndex: d.ModifyIndex ?? null })),
    evaluations: evaluations.map((e) => ({ ID: e.ID ?? null, Type: e.Type ?? null, TriggeredBy: e.TriggeredBy ?? null, Status: e.Status ?? null, StatusDescription: e.StatusDescription ?? null, DeploymentID: e.DeploymentID ?? null, CreateIndex: e.CreateIndex ?? null, ModifyIndex: e.ModifyIndex ?? null })),
  };
  writeFileSync(join(dir, 'expected.json'), pretty(expected));
  const meta = {
    scenario: run.name,
    job_id: run.jobId,
    notes: ['recorded live by test/live/health.test.ts (WARDEN_LIVE_FIXTURES=1): a job-scoped `warden record` watch from before the registration'],
    actions: [],
    stream_query: query,
    raft_index_before: 0,
    stream_opened_at: new Date(opened).toISOString(),
    stream_closed_t: closedT,
    stream_lines: lines.length,
  };
  writeFileSync(join(dir, 'meta.json'), `${JSON.stringify(meta, null, 2)}\n`);
}
