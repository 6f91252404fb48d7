/** Texts and formats the way Nomad's Go code writes them (durations, times, multi-errors). */
import { formatGoDuration } from '../../../machines/allocationHealthRules.js';

const NS_PER_MS = 1_000_000n;

/** Unix nanoseconds for a clock reading in milliseconds. */
export function nanosFromMillis(ms: number): bigint {
  return BigInt(Math.round(ms)) * NS_PER_MS;
}

/** Go's RFC3339Nano: trailing zeros of the fraction dropped, no fraction when it is zero. */
export function rfc3339Nano(ms: number): string {
  return new Date(Math.round(ms)).toISOString().replace(/\.?0+Z$/, 'Z').replace(/\.Z$/, 'Z');
}

/** Go's time.Duration.String() for a duration in nanoseconds ("10s", "1m30s", "500ms", "1.5µs", "0s"). */
export function goDuration(ns: number): string {
  const sign = ns < 0 ? '-' : '';
  const abs = Math.abs(ns);
  // From a millisecond up, the health rules' formatter says it (their reasons quote durations too).
  if (abs === 0 || abs >= 1_000_000) return `${sign}${formatGoDuration(abs / 1_000_000)}`;
  return abs < 1_000 ? `${sign}${abs}ns` : `${sign}${String(Number((abs / 1_000).toFixed(3)))}µs`;
}

const UNITS: Record<string, number> = { ns: 1, us: 1e3, 'µs': 1e3, 'μs': 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

/** Go's time.ParseDuration, in nanoseconds; undefined when Go would refuse the text. */
export function parseGoDuration(text: string): number | undefined {
  const match = /^([-+]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/.exec(text);
  if (text === '0') return 0;
  if (match === null) return undefined;
  let total = 0;
  for (const part of text.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) {
    total += Number(part[1]) * (UNITS[part[2]!] ?? 0);
  }
  return match[1] === '-' ? -total : total;
}

/** hashicorp/go-multierror's text: "1 error occurred:\n\t* …\n\n". */
export function multiError(errors: readonly string[]): string {
  const head = errors.length === 1 ? '1 error occurred:' : `${errors.length} errors occurred:`;
  return `${head}\n${errors.map((e) => `\t* ${e}`).join('\n')}\n\n`;
}
