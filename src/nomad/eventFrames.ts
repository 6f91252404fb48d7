/**
 * Decoding of one event-stream line into a frame, and type guards for the events Warden reads.
 * Unknown topics and event types pass through untouched; only a line that is not a frame at all
 * (not JSON, no Index/Events) is an error.
 */
import { NomadDecodeError } from './errors.js';
import { parseNomadJsonAt, type TimestampPatch } from './json.js';
import type { AllocationEvent, DeploymentEvent, EvaluationEvent, EventFrame, JobEvent, NomadEvent } from './types.js';

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isEvent(value: unknown): value is NomadEvent {
  return isRecord(value) && typeof value.Topic === 'string' && typeof value.Index === 'number' && isRecord(value.Payload);
}

/** A decoded frame; `skipped` counts elements of its Events list that were not events at all. */
export interface DecodedFrame extends EventFrame {
  skipped: number;
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
 * NomadDecodeError: the connection is suspect. An element of Events without Topic, Index and
 * Payload is skipped and counted, so that one bad event does not hold back its neighbours.
 */
export function decodeFrame(line: string): DecodedFrame | null {
  const value = parseNomadJsonAt(line, frameTimes);
  if (!isRecord(value)) throw new NomadDecodeError('event stream line is not a JSON object', line);
  const { Index, Events } = value;
  if ((Index === undefined || Index === 0) && (Events === undefined || Events === null)) return null;
  if (typeof Index !== 'number' || !Number.isSafeInteger(Index) || Index < 0) {
    throw new NomadDecodeError('event stream frame without a valid Index', line);
  }
  if (!Array.isArray(Events)) throw new NomadDecodeError('event stream frame without an Events list', line);
  const events = Events.filter(isEvent);
  return { Index, Events: events, skipped: Events.length - events.length };
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
