/**
 * Decoding of one event-stream line into a frame, and type guards for the events Warden reads.
 * Unknown topics and event types pass through untouched; an element of Events that is no event,
 * or an event of a topic Warden reads whose Payload lacks that topic's object, is skipped with the
 * reason: counted, the first few kept as examples (a batch of 200,000 unusable events is one
 * report, not 200,000). A line that is not a frame at all (not JSON, no Index/Events) is an error;
 * when it still names its batch (Nomad's compact `{"Events":[…],"Index":N}`), undecodableBatch
 * says which.
 */
import { scrubSecrets } from '../secrets.js';
import { NomadDecodeError } from './errors.js';
import { decoding, jsonPrefix, parseNomadJsonAt, type TimestampPatch } from './json.js';
import type { AllocationEvent, DeploymentEvent, EvaluationEvent, EventFrame, JobEvent, NomadEvent } from './types.js';

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The object each topic Warden reads carries in its Payload, under the topic's own name. */
const PAYLOAD_OBJECTS: ReadonlySet<string> = new Set(['Allocation', 'Job', 'Evaluation', 'Deployment']);

/** Why `value` is not a usable event, or undefined when it is one. */
function eventProblem(value: unknown): string | undefined {
  if (!isRecord(value)) return 'not an object';
  const { Topic, Payload } = value;
  if (typeof Topic !== 'string') return 'no Topic';
  if (typeof value.Index !== 'number') return `${Topic} event without a numeric Index`;
  if (!isRecord(Payload)) return `${Topic} event without a Payload object`;
  if (!PAYLOAD_OBJECTS.has(Topic)) return undefined;
  const object = Payload[Topic];
  if (!isRecord(object) || typeof object.ID !== 'string') return `${Topic} event whose Payload has no ${Topic} with an ID`;
  if (Topic === 'Allocation' && typeof object.ModifyIndex !== 'number') return 'Allocation event whose allocation has no numeric ModifyIndex';
  return undefined;
}

/** Longest excerpt of Nomad's text kept in a skip report: enough to find it, too short to copy a payload. */
const EXCERPT_CHARS = 120;

/**
 * Something Nomad sent that could not be used, skipped instead of stopping the stream: a whole
 * batch line (its events are lost) or one element of a batch's Events (its neighbours are kept).
 */
export interface SkippedEvent {
  /** Raft index of the batch. */
  index: number;
  /** Position of the element in the batch's Events; absent when the whole line was skipped. */
  position?: number;
  /** Why, in a few words. */
  reason: string;
  /** At most 120 characters: the text around the fault, or the event's Topic, Type, Key and Payload. */
  excerpt: string;
}

/** Examples kept of what one batch lost: enough to see what went wrong, bounded whatever the batch holds. */
export const SKIPPED_EXAMPLES = 3;

/** What one batch lost: how much, and the first few as examples. */
export interface BatchSkips {
  /** Raft index of the batch. */
  index: number;
  /** Elements of its Events list skipped; 1 for a whole line that did not decode (its example has no position). */
  count: number;
  /** The first skipped, in order: at most SKIPPED_EXAMPLES. */
  examples: readonly SkippedEvent[];
}

/** A decoded frame; `skipped` says which elements of its Events list were not usable events, if any were. */
export interface DecodedFrame extends EventFrame {
  skipped?: BatchSkips;
}

/** The element's Topic, Type and Key, then the start of its Payload: which event it was, and why. */
function elementExcerpt(element: unknown): string {
  if (!isRecord(element)) return scrubSecrets(jsonPrefix(element ?? null, EXCERPT_CHARS));
  const identity = [element.Topic, element.Type, element.Key].filter((part) => typeof part === 'string').join(' ');
  const payload = jsonPrefix(element.Payload ?? null, EXCERPT_CHARS);
  return scrubSecrets((identity === '' ? payload : `${identity}: ${payload}`).slice(0, EXCERPT_CHARS));
}

/** The task or reschedule events of `holder[key]` (`{Events: [...]}`), each with its timestamp. */
function eventTimes(holder: unknown, timeKey: string, patch: TimestampPatch): void {
  const events = isRecord(holder) ? holder.Events : undefined;
  if (!Array.isArray(events)) return;
  for (const event of events) if (isRecord(event)) patch.field(event, timeKey);
}

/**
 * Where Nomad's objects keep Unix-nanosecond times: their own CreateTime, ModifyTime and
 * SubmitTime, an allocation's Job, RescheduleTracker events and task events. Visited in key order,
 * which is the text order: the event stream writes payloads as Go maps, whose keys Go sorts.
 */
function objectTimes(object: Record<string, unknown>, patch: TimestampPatch): boolean {
  patch.field(object, 'CreateTime');
  if (isRecord(object.Job)) patch.field(object.Job, 'SubmitTime');
  patch.field(object, 'ModifyTime');
  eventTimes(object.RescheduleTracker, 'RescheduleTime', patch);
  patch.field(object, 'SubmitTime');
  const states = object.TaskStates;
  if (!isRecord(states)) return true;
  if (!patch.inTextOrder(states)) return false;
  for (const task in states) eventTimes(states[task], 'Time', patch);
  return true;
}

/** The timestamps of a frame: in the object of each event's Payload, events in order. */
function frameTimes(frame: object, patch: TimestampPatch): boolean {
  const events = (frame as { Events?: unknown }).Events;
  if (!Array.isArray(events)) return true;
  for (const event of events) {
    const payload = isRecord(event) ? event.Payload : undefined;
    if (!isRecord(payload)) continue;
    for (const key in payload) {
      const object = payload[key];
      if (isRecord(object) && !objectTimes(object, patch)) return false;
    }
  }
  return true;
}

/**
 * The frame of a line, or null for a heartbeat (`{}`; Nomad's own client also treats Index 0
 * without events as one). A line that is no frame (not JSON, no Index, no Events list) throws
 * NomadDecodeError. An element of Events without Topic, Index and Payload, or whose Payload lacks
 * the object of its topic (Allocation, Job, Evaluation, Deployment), is skipped, counted and
 * reported with the reason, so that one bad event does not hold back its neighbours.
 */
export function decodeFrame(line: string): DecodedFrame | null {
  // Whatever goes wrong on the way (the excerpt of an element nested thousands deep overflows the
  // stack, say) is a line that does not decode: skipped when it names its batch.
  return decoding(line, () => decodeLine(line));
}

function decodeLine(line: string): DecodedFrame | null {
  const value = parseNomadJsonAt(line, frameTimes);
  if (!isRecord(value)) throw new NomadDecodeError('event stream line is not a JSON object', line);
  const { Index, Events } = value;
  if ((Index === undefined || Index === 0) && (Events === undefined || Events === null)) return null;
  if (typeof Index !== 'number' || !Number.isSafeInteger(Index) || Index < 0) {
    throw new NomadDecodeError('event stream frame without a valid Index', line);
  }
  if (!Array.isArray(Events)) throw new NomadDecodeError('event stream frame without an Events list', line);
  const events: NomadEvent[] = [];
  let skipped: { index: number; count: number; examples: SkippedEvent[] } | undefined;
  for (let position = 0; position < Events.length; position++) {
    const element: unknown = Events[position];
    const reason = eventProblem(element);
    if (reason === undefined) {
      events.push(element as NomadEvent);
      continue;
    }
    skipped ??= { index: Index, count: 0, examples: [] };
    skipped.count++;
    // Only the examples get an excerpt: the rest are counted, never held.
    // The reason may name the element's Topic: text from the server too.
    if (skipped.examples.length < SKIPPED_EXAMPLES) skipped.examples.push({ index: Index, position, reason: scrubSecrets(reason), excerpt: elementExcerpt(element) });
  }
  return skipped === undefined ? { Index, Events: events } : { Index, Events: events, skipped };
}

/** Nomad's compact batch line: `{"Events":` … `,"Index":N}`, N without sign or leading zero. */
const BATCH_HEAD = '{"Events":';
const BATCH_TAIL = /,"Index":([1-9]\d{0,15})\}$/;
const JSON_ERROR_POSITION = /at position (\d+)/;

/**
 * The skip report of a line that decodeFrame refused (`error`), when the line still names its batch:
 * it begins and ends as Nomad writes a batch and its trailing Index is a safe integer. undefined
 * when it does not (raw error text, a line cut short): then nothing tells which batch to skip.
 */
export function undecodableBatch(line: string, error: NomadDecodeError): BatchSkips | undefined {
  if (!line.startsWith(BATCH_HEAD)) return undefined;
  const digits = BATCH_TAIL.exec(line.slice(-32))?.[1];
  const index = digits === undefined ? NaN : Number(digits);
  if (!Number.isSafeInteger(index)) return undefined;
  return { index, count: 1, examples: [{ index, reason: error.message, excerpt: lineExcerpt(line, error) }] };
}

/** The text around the position a JSON error names, else the start of the line. */
export function lineExcerpt(line: string, error: NomadDecodeError): string {
  const position = Number(JSON_ERROR_POSITION.exec(error.message)?.[1] ?? 0);
  const start = Math.max(0, Math.min(position - EXCERPT_CHARS / 2, line.length - EXCERPT_CHARS));
  return scrubSecrets(line.slice(start, start + EXCERPT_CHARS));
}

function hasObject<K extends string>(event: NomadEvent, topic: string, key: K, idKey = 'ID'): boolean {
  if (event.Topic !== topic) return false;
  const payload = (event.Payload as Record<string, unknown>)[key];
  return isRecord(payload) && typeof payload[idKey] === 'string';
}

export function isAllocationEvent(event: NomadEvent): event is AllocationEvent {
  return (
    hasObject(event, 'Allocation', 'Allocation') &&
    typeof (event.Payload as { Allocation: Record<string, unknown> }).Allocation.ModifyIndex === 'number'
  );
}

export function isJobEvent(event: NomadEvent): event is JobEvent {
  return hasObject(event, 'Job', 'Job');
}

export function isEvaluationEvent(event: NomadEvent): event is EvaluationEvent {
  return hasObject(event, 'Evaluation', 'Evaluation');
}

export function isDeploymentEvent(event: NomadEvent): event is DeploymentEvent {
  return hasObject(event, 'Deployment', 'Deployment');
}
