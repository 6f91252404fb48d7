/**
 * Nomad's time encodings, read as the health rules need them: RFC3339Nano strings (TaskState
 * StartedAt / FinishedAt), Unix-nanosecond timestamps (CreateTime, TaskEvent Time) and
 * integer-nanosecond durations, all to milliseconds.
 */
// RFC3339 with an optional fraction of up to 9 digits and a Z or ±hh:mm offset.
const RFC3339 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/** Go's zero time.Time, which old agents wrote instead of null. */
const GO_ZERO_TIME = /^0001-01-01T00:00:00(?:\.0+)?Z$/;

export type ParsedTime = { readonly ok: true; readonly ms: number | null } | { readonly ok: false; readonly problem: string };

/** RFC3339Nano → epoch milliseconds (sub-millisecond digits kept as a fraction); null/zero time → null. */
export function parseNomadTime(value: unknown): ParsedTime {
  if (value === null || value === undefined) return { ok: true, ms: null };
  if (typeof value !== 'string') return { ok: false, problem: `time ${JSON.stringify(value)} is not a string` };
  if (GO_ZERO_TIME.test(value)) return { ok: true, ms: null };
  const match = RFC3339.exec(value);
  const whole = match === null ? Number.NaN : Date.parse(`${match[1]}${match[3]}`);
  if (match === null || Number.isNaN(whole)) return { ok: false, problem: `time ${JSON.stringify(value)} is not RFC3339` };
  const fraction = Number(`0.${match[2] ?? '0'}`) * 1000;
  return { ok: true, ms: whole + fraction };
}

/**
 * A Unix-nanosecond timestamp (exact bigint from Warden's decoder, or a number) → epoch
 * milliseconds, microseconds kept as a fraction; 0 (Go's unset int64) → null.
 */
export function parseNanoTime(value: unknown): ParsedTime {
  if (value === null || value === undefined || value === 0 || value === 0n) return { ok: true, ms: null };
  if (isNanoTime(value)) return { ok: true, ms: typeof value === 'bigint' ? Number(value / 1000n) / 1000 : value / 1e6 };
  return { ok: false, problem: `time ${typeof value === 'bigint' ? value.toString() : JSON.stringify(value)} is not a Unix time in nanoseconds` };
}

/** A set Unix-nanosecond timestamp: a positive integer, bigint or number. */
export function isNanoTime(value: unknown): value is bigint | number {
  return typeof value === 'bigint' ? value > 0n : typeof value === 'number' && Number.isInteger(value) && value > 0;
}

/**
 * Nanoseconds (a Go int64: exact bigint from Warden's decoder, or a number) → milliseconds. A bigint
 * is cut to whole milliseconds, so two values in the same millisecond compare equal.
 */
export function nanoTimeToMs(nanoseconds: bigint | number): number {
  return typeof nanoseconds === 'bigint' ? Number(nanoseconds / 1_000_000n) : nanoseconds / 1e6;
}

/** A Go time.Duration in JSON (integer nanoseconds) → milliseconds, or null when it is not one. */
export function durationMs(nanoseconds: unknown): number | null {
  if (typeof nanoseconds === 'bigint') return nanoseconds >= 0n ? nanoTimeToMs(nanoseconds) : null;
  if (typeof nanoseconds !== 'number' || !Number.isInteger(nanoseconds) || nanoseconds < 0) return null;
  return nanoTimeToMs(nanoseconds);
}
