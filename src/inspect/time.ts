import type { IsoTime } from './schema.js';

/** A clock time (epoch ms, possibly fractional) as the schema's instant: ISO 8601, UTC, whole milliseconds. */
export function isoTime(ms: number): IsoTime {
  return new Date(Math.floor(ms)).toISOString();
}

export function isoTimeOrNull(ms: number | null | undefined): IsoTime | null {
  return ms === null || ms === undefined || !Number.isFinite(ms) ? null : isoTime(ms);
}
