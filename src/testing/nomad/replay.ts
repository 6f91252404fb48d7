/**
 * Replays a recorded event stream into the cluster: each data line at its `t` on the clock (or all
 * at once), the state updated from the payloads so the GET endpoints answer consistently, and the
 * exact recorded bytes served when no transform touched the batch.
 */
import type { Clock, TimerHandle } from '../../clock/index.js';
import { parseNomadJson } from '../../nomad/json.js';
import { stringifyLossless } from '../losslessJson.js';
import { isHeartbeatLine, type RecordedLine } from '../recording.js';
import type { ClusterState } from './clusterState.js';
import type { StreamEvent } from './eventBroker.js';
import { errorMessage } from '../../errorMessage.js';

/** Changes or drops (null) one recorded event before it is applied and published. */
export type ReplayTransform = (event: StreamEvent) => StreamEvent | null;

/** Rewrites the stream line of a batch, given its Index: how a test scripts a corrupt line. */
export type LineRewrite = (line: string, index: number) => string;

export interface ReplayOptions {
  transform?: ReplayTransform;
  /** Skip lines whose batch Index is below this (a recording's stale first line). */
  fromIndex?: number;
  /**
   * The line streams serve for each batch (return it unchanged to leave it), while the cluster
   * state still takes the batch's events: a bad line stays in the event buffer, as in a Nomad that
   * sent one, and is served again on every replay. Subscriptions that filter out some of the
   * batch's events get a clean line of the rest.
   */
  rewriteLine?: LineRewrite;
}

/** Raised for a recorded line that is neither a heartbeat nor a `{Events, Index}` batch. */
export class ReplayLineError extends Error {
  constructor(readonly line: RecordedLine, reason: string) {
    super(`recorded line at t=${line.t} is not an event batch: ${reason}`);
    this.name = 'ReplayLineError';
  }
}

export interface ReplayHandle {
  /** Resolves when every line has been applied (or the replay was stopped). */
  readonly done: Promise<void>;
  stop(): void;
}

function toBatch(line: RecordedLine, options: ReplayOptions): { Index: number; Events: StreamEvent[]; raw?: string } | undefined {
  let value: unknown;
  try {
    // The client's parser: exact nanosecond timestamps at JSON.parse speed (replays are the hot path).
    value = parseNomadJson(line.raw);
  } catch (error) {
    throw new ReplayLineError(line, errorMessage(error));
  }
  const batch = value as { Index?: unknown; Events?: unknown };
  if (typeof batch.Index !== 'number' || !Array.isArray(batch.Events)) throw new ReplayLineError(line, 'no Index/Events');
  if (options.fromIndex !== undefined && batch.Index < options.fromIndex) return undefined;
  const events = batch.Events as StreamEvent[];
  const { transform, rewriteLine } = options;
  const transformed = transform === undefined ? events : events.map((e) => transform(e)).filter((e): e is StreamEvent => e !== null);
  const raw = transform === undefined ? line.raw : undefined;
  if (rewriteLine === undefined) return { Index: batch.Index, Events: transformed, ...(raw === undefined ? {} : { raw }) };
  return { Index: batch.Index, Events: transformed, raw: rewriteLine(raw ?? stringifyLossless({ Events: transformed, Index: batch.Index }), batch.Index) };
}

/** Applies every data line now, in order (state preparation). */
export function replayNow(cluster: ClusterState, lines: readonly RecordedLine[], options: ReplayOptions = {}): void {
  for (const line of lines) {
    if (isHeartbeatLine(line)) continue;
    const batch = toBatch(line, options);
    if (batch) cluster.applyRecordedBatch(batch);
  }
}

/** Applies each data line at replay start + its `t` on `clock`. */
export function replayOnClock(cluster: ClusterState, clock: Clock, lines: readonly RecordedLine[], options: ReplayOptions = {}): ReplayHandle {
  const data = lines.filter((line) => !isHeartbeatLine(line));
  const start = clock.now();
  let next = 0;
  let timer: TimerHandle | undefined;
  let finish: () => void = () => undefined;
  let fail: (error: unknown) => void = () => undefined;
  const done = new Promise<void>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  const step = (): void => {
    timer = undefined;
    try {
      while (next < data.length && start + data[next]!.t <= clock.now()) {
        const batch = toBatch(data[next++]!, options);
        if (batch) cluster.applyRecordedBatch(batch);
      }
    } catch (error) {
      fail(error);
      return;
    }
    if (next >= data.length) finish();
    else timer = clock.setTimeout(step, start + data[next]!.t - clock.now());
  };
  step();
  return {
    done,
    stop: () => {
      if (timer !== undefined) clock.clearTimeout(timer);
      next = data.length;
      finish();
    },
  };
}
