/**
 * Nomad's time encodings, read as the health rules need them: RFC3339Nano strings (TaskState
 * StartedAt / FinishedAt), Unix-nanosecond timestamps (CreateTime, TaskEvent Time) and
 * integer-nanosecond durations, all to milliseconds.
 */
import { digitsAt } from '../decimalDigits.js';
import type { NanoTime } from '../nomad/types.js';
import { UnixNanos } from '../nomad/unixNanos.js';

// RFC3339 with an optional fraction of up to 9 digits and a Z or ±hh:mm offset.
const RFC3339 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/** Go's zero time.Time, which old agents wrote instead of null. */
const GO_ZERO_TIME = /^0001-01-01T00:00:00(?:\.0+)?Z$/;

export type ParsedTime = { readonly ok: true; readonly ms: number | null } | { readonly ok: false; readonly problem: string };

const NO_TIME: ParsedTime = { ok: true, ms: null };

/**
 * Days from 1970-01-01 to the `day`th of `month` (1–12) of `year`, the day counted on past the
 * month's end as Date.UTC counts it (linear in `day`): Howard Hinnant's days_from_civil, in integer
 * arithmetic, about a quarter of Date.UTC's cost.
 */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/**
 * What parseNomadTime gives for the form Nomad writes (`YYYY-MM-DDTHH:MM:SS[.fraction]Z`), read
 * without a regular expression or a string built for Date.parse; undefined for anything else (an
 * offset, a year before 1000, a field out of Date.parse's range), which takes the general path.
 * Same result: daysFromCivil is Date.UTC, which is Date.parse, for those fields, and a fraction of at
 * most 9 digits divided by its power of ten is, rounded once, the number its decimal text reads as.
 */
function canonicalTimeMs(value: string): number | undefined {
  const length = value.length;
  if (length < 20 || value.charCodeAt(length - 1) !== 0x5a /* Z */) return undefined;
  const separators = value.charCodeAt(4) === 0x2d && value.charCodeAt(7) === 0x2d && value.charCodeAt(10) === 0x54 && value.charCodeAt(13) === 0x3a && value.charCodeAt(16) === 0x3a;
  if (!separators) return undefined;
  const year = digitsAt(value, 0, 4);
  const month = digitsAt(value, 5, 2);
  const day = digitsAt(value, 8, 2);
  const hour = digitsAt(value, 11, 2);
  const minute = digitsAt(value, 14, 2);
  const second = digitsAt(value, 17, 2);
  if (!(year >= 1000 && month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour <= 23 && minute <= 59 && second <= 59)) return undefined;
  let fraction = 0;
  if (length > 20) {
    const digits = length - 21;
    if (value.charCodeAt(19) !== 0x2e /* . */ || digits < 1 || digits > 9) return undefined;
    const part = digitsAt(value, 20, digits);
    if (Number.isNaN(part)) return undefined;
    fraction = (part / 10 ** digits) * 1000;
  }
  return ((daysFromCivil(year, month, day) * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + fraction;
}

/** RFC3339Nano → epoch milliseconds (sub-millisecond digits kept as a fraction); null/zero time → null. */
export function parseNomadTime(value: unknown): ParsedTime {
  if (value === null || value === undefined) return NO_TIME;
  if (typeof value !== 'string') return { ok: false, problem: `time ${typeof value === 'bigint' ? `${value}n` : JSON.stringify(value)} is not a string` };
  const canonical = canonicalTimeMs(value);
  if (canonical !== undefined) return { ok: true, ms: canonical };
  if (GO_ZERO_TIME.test(value)) return { ok: true, ms: null };
  const match = RFC3339.exec(value);
  const whole = match === null ? Number.NaN : Date.parse(`${match[1]}${match[3]}`);
  if (match === null || Number.isNaN(whole)) return { ok: false, problem: `time ${JSON.stringify(value)} is not RFC3339` };
  const fraction = Number(`0.${match[2] ?? '0'}`) * 1000;
  return { ok: true, ms: whole + fraction };
}

/**
 * A Unix-nanosecond timestamp (exact UnixNanos from Warden's decoder, a bigint, or a number) →
 * epoch milliseconds, microseconds kept as a fraction; 0 (Go's unset int64) → null.
 */
export function parseNanoTime(value: unknown): ParsedTime {
  if (isNanoTime(value)) return { ok: true, ms: nanoTimeMs(value) };
  if (value === null || value === undefined || value === 0 || value === 0n || (value instanceof UnixNanos && value.seconds === 0 && value.nanos === 0)) return NO_TIME;
  return { ok: false, problem: `time ${typeof value === 'bigint' ? value.toString() : JSON.stringify(value)} is not a Unix time in nanoseconds` };
}

/** A set Unix-nanosecond timestamp (see isNanoTime) in epoch ms, microseconds kept as a fraction: parseNanoTime's `ms`, with no result object. */
export function nanoTimeMs(value: NanoTime): number {
  if (value instanceof UnixNanos) return value.ms;
  return typeof value === 'bigint' ? Number(value / 1000n) / 1000 : value / 1e6;
}

/** A set Unix-nanosecond timestamp: a positive integer, as a UnixNanos, a bigint or a number. */
export function isNanoTime(value: unknown): value is NanoTime {
  if (value instanceof UnixNanos) return value.seconds > 0 || value.nanos > 0;
  return typeof value === 'bigint' ? value > 0n : typeof value === 'number' && Number.isInteger(value) && value > 0;
}

/**
 * Nanoseconds (a Go int64: exact UnixNanos or bigint, or a number) → milliseconds. An exact value is
 * cut to whole milliseconds, so two values in the same millisecond compare equal.
 */
export function nanoTimeToMs(nanoseconds: NanoTime): number {
  if (nanoseconds instanceof UnixNanos) return nanoseconds.wholeMs;
  return typeof nanoseconds === 'bigint' ? Number(nanoseconds / 1_000_000n) : nanoseconds / 1e6;
}

/** A Go time.Duration in JSON (integer nanoseconds) → milliseconds, or null when it is not one. */
export function durationMs(nanoseconds: unknown): number | null {
  if (typeof nanoseconds === 'bigint') return nanoseconds >= 0n ? nanoTimeToMs(nanoseconds) : null;
  if (typeof nanoseconds !== 'number' || !Number.isInteger(nanoseconds) || nanoseconds < 0) return null;
  return nanoTimeToMs(nanoseconds);
}
