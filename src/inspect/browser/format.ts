/** Times and durations in the page's words: clock times in UTC, countdowns against the server's clock. */
export { formatGoDuration as goDuration } from '../../../machines/allocationHealthRules.js';

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** "18:00:03.300" (UTC). */
export function clockText(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)}`;
}

/** "2026-11-29" (UTC). */
export function dayText(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** "in 1.5s", "3m 2s ago", "now": to the tenth of a second under a minute. */
export function relativeText(ms: number, now: number): string {
  const delta = ms - now;
  const abs = Math.abs(delta);
  if (abs < 50) return 'now';
  const words = abs < 60_000 ? `${Math.round(abs / 100) / 10}s` : abs < 3_600_000 ? `${Math.floor(abs / 60_000)}m ${Math.round((abs % 60_000) / 1000)}s` : `${Math.floor(abs / 3_600_000)}h ${Math.floor((abs % 3_600_000) / 60_000)}m`;
  return delta > 0 ? `in ${words}` : `${words} ago`;
}

/** An ISO instant from the server, in milliseconds; null stays null. */
export function instant(iso: string | null): number | null {
  if (iso === null) return null;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? null : ms;
}

/** "18:00:03.300 UTC (in 1.5s)", or "—". */
export function whenText(iso: string | null, now: number): string {
  const ms = instant(iso);
  return ms === null ? '—' : `${clockText(ms)} UTC (${relativeText(ms, now)})`;
}

export function shortId(id: string): string {
  return id.slice(0, 8);
}
