/**
 * When a failed allocation may be rescheduled, and after how long, as Nomad 1.1.2 decides it
 * (nomad/structs/structs.go RescheduleEligible, NextDelay, NextRescheduleTime, LastEventTime), from
 * its group's ReschedulePolicy and its RescheduleTracker. Times are Unix nanoseconds as Nomad keeps
 * them; pure functions, no clock.
 */
import type { JsonObject } from './jobSpec.js';

interface TrackerEvent {
  RescheduleTime: number;
  PrevAllocID: string;
  PrevNodeID: string;
  Delay: number;
}

const num = (value: unknown): number => Number(value ?? 0);

function trackerEvents(alloc: JsonObject): TrackerEvent[] {
  const tracker = alloc.RescheduleTracker as { Events?: JsonObject[] | null } | null | undefined;
  return (tracker?.Events ?? []).map((e) => ({ RescheduleTime: num(e.RescheduleTime), PrevAllocID: String(e.PrevAllocID ?? ''), PrevNodeID: String(e.PrevNodeID ?? ''), Delay: num(e.Delay) }));
}

/** How many reschedules the tracker holds within the policy's interval before `failTime`. */
function attemptedWithin(events: readonly TrackerEvent[], policy: JsonObject, failTime: number): number {
  return events.filter((e) => failTime - e.RescheduleTime < num(policy.Interval)).length;
}

/** RescheduleEligible: whether the policy allows another reschedule of an allocation that failed at `failTime`. */
export function rescheduleEligible(alloc: JsonObject, policy: JsonObject | null | undefined, failTime: number): boolean {
  if (!policy) return false;
  const attempts = num(policy.Attempts);
  if (!(attempts > 0 || policy.Unlimited === true)) return false;
  if (policy.Unlimited === true) return true;
  const events = trackerEvents(alloc);
  if (events.length === 0) return true;
  return attemptedWithin(events, policy, failTime) < attempts;
}

/** LastEventTime: the latest FinishedAt of its tasks (RFC 3339 in the tables), else its ModifyTime. */
export function lastEventTime(alloc: JsonObject): number {
  const states = Object.values((alloc.TaskStates as Record<string, JsonObject> | null) ?? {});
  let latest = 0;
  for (const state of states) {
    if (typeof state.FinishedAt !== 'string') continue;
    latest = Math.max(latest, nanosOf(state.FinishedAt));
  }
  return latest > 0 ? latest : num(alloc.ModifyTime);
}

/** RFC 3339 with up to nanoseconds → Unix nanoseconds (exact to the microsecond within a double). */
function nanosOf(text: string): number {
  const match = /^(.*?)(?:\.(\d+))?Z$/.exec(text);
  const whole = Date.parse(`${match?.[1] ?? text}Z`);
  const fraction = Number(((match?.[2] ?? '') + '000000000').slice(0, 9));
  return whole * 1e6 + fraction;
}

/** NextDelay: the policy's delay, grown by its delay function over the tracker's events, capped by MaxDelay. */
export function nextDelay(alloc: JsonObject, policy: JsonObject | null | undefined): number {
  if (!policy) return 0;
  const delay = num(policy.Delay);
  const events = trackerEvents(alloc);
  if (events.length === 0) return delay;
  const last = events[events.length - 1]!;
  let next = delay;
  if (policy.DelayFunction === 'exponential') next = last.Delay * 2;
  else if (policy.DelayFunction === 'fibonacci') {
    if (events.length >= 2) {
      const before = events[events.length - 2]!.Delay;
      next = before === num(policy.MaxDelay) && last.Delay === delay ? last.Delay : last.Delay + before;
    }
  } else return delay;
  const max = num(policy.MaxDelay);
  if (max > 0 && next > max) {
    next = max;
    // A long enough healthy run starts the series again.
    if (lastEventTime(alloc) - last.RescheduleTime > next) next = delay;
  }
  return next;
}

/** NextRescheduleTime: when the allocation may be rescheduled, and whether the policy still allows it then. */
export function nextRescheduleTime(alloc: JsonObject, policy: JsonObject | null | undefined): { at: number; eligible: boolean } {
  const failTime = lastEventTime(alloc);
  if (alloc.DesiredStatus === 'stop' || alloc.ClientStatus !== 'failed' || failTime === 0 || !policy) return { at: 0, eligible: false };
  const delay = nextDelay(alloc, policy);
  const events = trackerEvents(alloc);
  const attempts = num(policy.Attempts);
  let eligible = policy.Unlimited === true || (attempts > 0 && events.length === 0);
  if (attempts > 0 && events.length > 0) eligible = attemptedWithin(events, policy, failTime) < attempts && delay < num(policy.Interval);
  return { at: failTime + delay, eligible };
}

/** The tracker a replacement carries: the failed allocation's events and this reschedule. */
export function nextTracker(alloc: JsonObject, nowNanos: bigint, delay: number): JsonObject {
  const previous = ((alloc.RescheduleTracker as { Events?: JsonObject[] | null } | null | undefined)?.Events ?? []);
  return { Events: [...previous, { RescheduleTime: nowNanos, PrevAllocID: String(alloc.ID), PrevNodeID: String(alloc.NodeID ?? ''), Delay: delay }] };
}
