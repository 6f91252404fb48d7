import { Observable, combineLatest, concatMap, distinctUntilChanged, map, tap } from 'rxjs';
import type { Clock } from '../clock/index.js';
import type { BackoffOptions } from '../nomad/backoff.js';
import type { NomadClient } from '../nomad/client.js';
import { isAllocationEvent, isDeploymentEvent, isEvaluationEvent, isJobEvent, type BatchSkips, type SkippedEvent } from '../nomad/eventFrames.js';
import { NomadHttpError } from '../nomad/errors.js';
import { EMPTY_CLOSES_SUSPECTED_REFUSAL, nomadEventStream, type EventBatch, type StreamState } from '../nomad/eventStream.js';
import type { AllocationListStub, NomadEvent } from '../nomad/types.js';
import { isJobPurge } from '../streams/jobCache.js';
import type { SupervisorInput, SupervisorInputs } from './inputs.js';
import type { ResolvedScope } from '../intake/scope.js';

/** The topics the supervisor follows. */
export const SUPERVISOR_TOPICS = ['Job', 'Evaluation', 'Allocation', 'Deployment'] as const;

/**
 * Within one raft index, jobs and deployments first: an allocation placed in the same plan is
 * then joined with the job version and deployment published beside it.
 */
const TOPIC_ORDER: Readonly<Record<string, number>> = { Job: 0, Deployment: 1, Evaluation: 2, Allocation: 3 };

function toInput(event: NomadEvent, index: number, resync: boolean): SupervisorInput | undefined {
  if (isAllocationEvent(event)) {
    const { Allocation: allocation } = event.Payload;
    if (typeof allocation.JobID !== 'string' || typeof allocation.TaskGroup !== 'string') {
      return { kind: 'problem', problem: 'bad-payload', message: `allocation ${allocation.ID} without JobID or TaskGroup skipped`, index };
    }
    return resync ? { kind: 'allocation', allocation, index, resync: true } : { kind: 'allocation', allocation, index };
  }
  if (isEvaluationEvent(event)) return { kind: 'evaluation', evaluation: event.Payload.Evaluation, index };
  if (isDeploymentEvent(event)) return { kind: 'deployment', deployment: event.Payload.Deployment, index };
  if (isJobEvent(event)) return { kind: 'job', job: event.Payload.Job, index, ...(isJobPurge(event) ? { deleted: true } : {}) };
  // Other topics are not ours (the stream has already skipped events of ours without their object).
  return undefined;
}

/** Why one skipped thing was skipped, and the text around it. */
function because(skipped: SkippedEvent): string {
  return `${skipped.reason} (near ${JSON.stringify(skipped.excerpt)})`;
}

/**
 * What the stream skipped of one batch, in the supervisor's words: one problem per batch, however
 * many events it lost (the batch or the event, why, and where; past one, the count and examples).
 * For a listing's batch, the allocations it could not decode.
 */
function skippedInput(skipped: BatchSkips, resync: boolean): SupervisorInput {
  const [first] = skipped.examples;
  const examples = skipped.examples.map((example) => `${example.position === undefined ? '' : `event ${example.position}: `}${because(example)}`).join('; ');
  let message: string;
  if (resync) {
    const what = skipped.count === 1 ? '1 allocation could not be decoded and was skipped' : `${skipped.count} allocations could not be decoded and were skipped, for example`;
    message = `allocation listing at index ${skipped.index}: ${what}: ${examples}`;
  } else if (first === undefined || skipped.count > 1) {
    message = `event stream batch ${skipped.index}: ${skipped.count} events could not be decoded and were skipped, for example ${examples}`;
  } else {
    const what = first.position === undefined ? `event stream batch ${skipped.index}` : `event ${first.position} of event stream batch ${skipped.index}`;
    message = `${what} could not be decoded and was skipped: ${because(first)}`;
  }
  return { kind: 'problem', problem: 'bad-payload', message, index: skipped.index };
}

const topicOrder = (event: NomadEvent): number => TOPIC_ORDER[event.Topic] ?? 4;

/** The events of a batch in the order the supervisor takes them (most batches are in it already). */
function ordered(events: readonly NomadEvent[]): readonly NomadEvent[] {
  for (let i = 1; i < events.length; i++) {
    if (topicOrder(events[i - 1] as NomadEvent) > topicOrder(events[i] as NomadEvent)) return [...events].sort((a, b) => topicOrder(a) - topicOrder(b));
  }
  return events;
}

/**
 * The topics to subscribe to: every event of them, or, for a scope of exact jobs, those Nomad keys by
 * the jobs (a job's own events, and its allocations', evaluations' and deployments', which carry the
 * job in their FilterKeys), so that Nomad filters them and sends nothing else.
 */
export function topicsFor(scope: Pick<ResolvedScope, 'jobs'>): string[] {
  if (scope.jobs.length === 0) return [...SUPERVISOR_TOPICS];
  return SUPERVISOR_TOPICS.flatMap((topic) => scope.jobs.map((job) => `${topic}:${job}`));
}

/** The supervisor's inputs of one batch of the event stream, in the order it takes them. */
export function batchInputs(batch: EventBatch): SupervisorInput[] {
  const inputs: SupervisorInput[] = batch.skipped === undefined ? [] : [skippedInput(batch.skipped, batch.resync)];
  for (const event of ordered(batch.events)) {
    const input = toInput(event, batch.index, batch.resync);
    if (input !== undefined) inputs.push(input);
  }
  return inputs;
}

/** All streams streaming → streaming; otherwise the state of the first that is not. */
function combinedState(states: readonly StreamState[]): StreamState {
  return states.find((state) => state.status !== 'streaming') ?? (states[0] as StreamState);
}

function connectionInput(state: StreamState, clock: Clock): SupervisorInput | undefined {
  switch (state.status) {
    case 'connecting':
    case 'resyncing':
      return { kind: 'connection', state: state.status };
    case 'streaming':
      return { kind: 'connection', state: 'streaming', index: state.lastIndex };
    case 'backingOff':
      return {
        kind: 'connection',
        state: 'backingOff',
        attempt: state.failures,
        retryInMs: Math.max(0, (state.retryAt ?? clock.now()) - clock.now()),
        reason: state.error?.message ?? 'connection lost',
      };
    case 'failed':
      return { kind: 'problem', problem: 'stream-failed', message: `event stream gave up: ${failureText(state.error)}` };
    case 'stopped':
      return undefined;
  }
}

/** Reported once per run of empty closes; the connection state carries the same reason throughout. */
function refusalInput(state: StreamState): SupervisorInput | undefined {
  if (state.status !== 'backingOff' || state.emptyCloses !== EMPTY_CLOSES_SUSPECTED_REFUSAL) return undefined;
  return { kind: 'problem', problem: 'stream-refused', message: state.error?.message ?? 'event stream closed before its first byte' };
}

function failureText(error: Error | undefined): string {
  if (error instanceof NomadHttpError && error.isPermissionDenied) {
    return `the token may not read topics ${SUPERVISOR_TOPICS.join(', ')} (${error.message})`;
  }
  return error?.message ?? 'unknown error';
}

/** Sees each event stream's batches and states as they are (metrics): it must not throw. */
export interface EventStreamMonitor {
  batch?(batch: EventBatch, namespace: string): void;
  state?(state: StreamState, namespace: string): void;
}

export interface NomadSourceOptions {
  monitor?: EventStreamMonitor;
  /** Reconnect back-off (its jitter source: a replay's recorded draws). */
  backoff?: BackoffOptions;
}

/**
 * The cluster as the supervisor reads it: one resumable event stream per watched namespace
 * (a single one for `*`), listing the allocations first (restart safety: list, then watch), with
 * the stream's connection state interleaved as inputs.
 */
export function nomadSource(client: NomadClient, scope: ResolvedScope, clock: Clock, options: NomadSourceOptions = {}): Observable<SupervisorInputs> {
  const { monitor = {}, backoff } = options;
  const namespaces = scope.namespaces.includes('*') ? ['*'] : scope.namespaces;
  const topics = topicsFor(scope);
  const streams = namespaces.map((namespace) => {
    // A listing fetches in full only the allocations in scope (a gate on one job of a big cluster reads its own).
    const resyncFilter = (stub: AllocationListStub): boolean => scope.includes(stub.Namespace, stub.JobID);
    const stream = nomadEventStream(client, { topics, namespace, clock, resyncOnStart: true, resyncFilter, ...(backoff ? { backoff } : {}) });
    return {
      namespace,
      stream,
      state: monitor.state === undefined ? stream.state : stream.state.pipe(tap((state) => monitor.state?.(state, namespace))),
    };
  });
  // A state comes with every frame (its index moves): one stream's go straight to the comparison.
  const states = (streams.length === 1 ? (streams[0] as (typeof streams)[number]).state : combineLatest(streams.map((stream) => stream.state)).pipe(map(combinedState))).pipe(
    distinctUntilChanged((a, b) => a.status === b.status && a.failures === b.failures),
    concatMap((state) => [refusalInput(state), connectionInput(state, clock)]),
  );
  return new Observable<SupervisorInputs>((subscriber) => {
    const subscription = states.subscribe((input) => {
      if (input !== undefined) subscriber.next(input);
    });
    // Each batch's inputs go on as one emission, by plain calls from the decoded frame (see NomadEventStream.follow).
    for (const { namespace, stream } of streams) {
      const onBatch = (batch: EventBatch): void => {
        monitor.batch?.(batch, namespace);
        subscriber.next(batchInputs(batch));
      };
      subscription.add(stream.follow(onBatch, (error) => subscriber.error(error)));
    }
    return subscription;
  });
}
