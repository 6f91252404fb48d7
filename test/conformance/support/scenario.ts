/**
 * Jobs and streams the conformance cases share: raw_exec job specs as the API takes them, a stream
 * of one case's jobs, and a fence that proves every earlier event has been delivered.
 */
import type { Target } from './target.js';
import { ofJob, type EventTap, type Frame, type StreamEvent } from './eventTap.js';

export type JsonObject = Record<string, unknown>;

export interface JobOptions {
  type?: 'service' | 'batch';
  count?: number;
  command?: string;
  args?: string[];
  meta?: Record<string, string>;
  /** Fields merged into the task group (Update, RestartPolicy, ReschedulePolicy, Meta ...). */
  group?: JsonObject;
  /** More task groups. */
  groups?: JsonObject[];
}

/** A raw_exec job as PUT /v1/jobs takes it: one group `g` of one task `t` (sleep 300 by default). */
export function rawExecJob(id: string, options: JobOptions = {}): JsonObject {
  return {
    ID: id, Name: id, Type: options.type ?? 'service', Datacenters: ['dc1'], ...(options.meta ? { Meta: options.meta } : {}),
    TaskGroups: [
      {
        Name: 'g', Count: options.count ?? 1,
        Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: options.command ?? '/bin/sleep', args: options.args ?? ['300'] }, Resources: { CPU: 20, MemoryMB: 20 } }],
        ...options.group,
      },
      ...(options.groups ?? []),
    ],
  };
}

/** A count-0 group carrying meta (Poseidon's `config` group): changing it changes no running allocation. */
export function configGroup(meta: Record<string, string>): JsonObject {
  return { Name: 'config', Count: 0, Meta: meta, Tasks: [{ Name: 'c', Driver: 'raw_exec', Config: { command: '/bin/true' }, Resources: { CPU: 10, MemoryMB: 10 } }] };
}

/**
 * A job whose task runs `runMs` and exits with `exitCode`, never restarted (restart attempts 0),
 * rescheduled as `reschedule` says: the live agent runs the command, the fake has the same failure
 * injected (Target.failAllocations) for `times` allocations.
 */
export function failingJob(target: Target, id: string, options: JobOptions & { exitCode: number; runMs: number; times: number; reschedule: JsonObject }): JsonObject {
  target.failAllocations(id, { exitCode: options.exitCode, runMs: options.runMs, times: options.times });
  return rawExecJob(id, {
    ...options,
    command: '/bin/sh',
    args: ['-c', `sleep ${options.runMs / 1000}; exit ${options.exitCode}`],
    group: { RestartPolicy: { Attempts: 0, Mode: 'fail', Interval: 1_800e9, Delay: 1e9 }, ReschedulePolicy: options.reschedule, ...options.group },
  });
}

export interface JobStream {
  readonly tap: EventTap;
  /** Frames holding events of the case's jobs, with only those events. */
  frames(jobId?: string): Frame[];
  /** Events of the case's jobs (of one of them), in order. */
  events(jobId?: string): StreamEvent[];
  /** Waits until `done` holds over the frames of the case's jobs. */
  until(what: string, done: (frames: Frame[]) => boolean, ms?: number): Promise<Frame[]>;
  /**
   * A write with an event at a newer index (deregistering a job that does not exist still creates
   * an evaluation), waited for: every event of the case's jobs published before it has arrived.
   */
  fence(): Promise<void>;
  close(): void;
}

/** The events of `jobIds` from now on (an index in the future: nothing old replayed), with a fence. */
export async function streamJobs(target: Target, jobIds: readonly string[]): Promise<JobStream> {
  const fenceId = target.jobId('fence');
  const topics = [...jobIds, fenceId].flatMap((id) => ['Job', 'Evaluation', 'Allocation', 'Deployment'].map((topic) => `topic=${topic}:${encodeURIComponent(id)}`));
  const tap = await target.stream(`index=9007199254740991&${topics.join('&')}`);
  const mine = (jobId?: string) => (event: StreamEvent): boolean => (jobId === undefined ? jobIds.some((id) => ofJob(id)(event)) : ofJob(jobId)(event));
  let fences = 0;
  return {
    tap,
    frames: (jobId) => tap.data(mine(jobId)),
    events: (jobId) => tap.data(mine(jobId)).flatMap((frame) => [...(frame.Events ?? [])]),
    until: async (what, done, ms) => {
      await tap.until(what, () => done(tap.data(mine())), ms);
      return tap.data(mine());
    },
    fence: async () => {
      const seen = tap.data(ofJob(fenceId)).length;
      fences += 1;
      const answer = await target.request('DELETE', `/v1/job/${fenceId}`);
      if (answer.status !== 200) throw new Error(`fence ${fences}: ${answer.status} ${answer.text}`);
      await tap.until(`fence ${fences}`, () => tap.data(ofJob(fenceId)).length > seen, 10_000);
    },
    close: () => tap.close(),
  };
}

/** PUT /v1/jobs, expecting 200; the JobRegisterResponse. */
export async function register(target: Target, job: JsonObject, extra: JsonObject = {}): Promise<{ EvalID: string; JobModifyIndex: number; Index: number }> {
  const answer = await target.request('PUT', '/v1/jobs', { Job: job, ...extra });
  if (answer.status !== 200) throw new Error(`register ${String(job.ID)}: ${answer.status} ${answer.text}`);
  return answer.json();
}

/** An allocation's payload in an event. */
export const allocOf = (event: StreamEvent): JsonObject => event.Payload.Allocation as JsonObject;

/** What a frame says of each of its events, for messages: `Topic/Type id status`. */
export function describeFrames(frames: readonly Frame[]): string {
  return frames
    .map((frame) => `${frame.Index} @${frame.at}: ${(frame.Events ?? []).map((e) => {
      const p = e.Payload[e.Topic] ?? {};
      const health = (p.DeploymentStatus as { Healthy?: boolean } | undefined)?.Healthy;
      const marked = (p.DesiredTransition as { Reschedule?: boolean } | undefined)?.Reschedule ? ' reschedule' : '';
      return `${e.Topic}/${e.Type} ${String(p.ID ?? e.Key).slice(0, 8)} ${String(p.Status ?? p.ClientStatus ?? '')}${p.DesiredStatus ? `/${String(p.DesiredStatus)}` : ''}${health === undefined ? '' : ` healthy=${health}`}${marked}`;
    }).join(' | ')}`)
    .join('\n');
}

/** Runs a case's checks on `frames`; a failed check's message ends with the frames, so a live failure can be read. */
export function checkFrames(frames: readonly Frame[], check: () => void): void {
  try {
    check();
  } catch (error) {
    if (error instanceof Error) error.message += `\n\nthe frames:\n${describeFrames(frames)}`;
    throw error;
  }
}
