/** Texts and formats the way Nomad's Go code writes them (durations, times, multi-errors). */

const NS_PER_MS = 1_000_000n;

/** Unix nanoseconds for a clock reading in milliseconds. */
export function nanosFromMillis(ms: number): bigint {
  return BigInt(Math.round(ms)) * NS_PER_MS;
}

/** Go's RFC3339Nano: trailing zeros of the fraction dropped, no fraction when it is zero. */
export function rfc3339Nano(ms: number): string {
  return new Date(Math.round(ms)).toISOString().replace(/\.?0+Z$/, 'Z').replace(/\.Z$/, 'Z');
}

/** Go's time.Duration.String() for a duration in nanoseconds ("10s", "1m30s", "500ms", "0s"). */
export function goDuration(ns: number): string {
  if (ns === 0) return '0s';
  const sign = ns < 0 ? '-' : '';
  const abs = Math.abs(ns);
  if (abs < 1_000) return `${sign}${abs}ns`;
  if (abs < 1_000_000) return `${sign}${trim(abs / 1_000)}µs`;
  if (abs < 1_000_000_000) return `${sign}${trim(abs / 1_000_000)}ms`;
  const totalSeconds = abs / 1_000_000_000;
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds - hours * 3600) / 60);
  const seconds = totalSeconds - hours * 3600 - minutes * 60;
  const h = hours > 0 ? `${hours}h` : '';
  const m = hours > 0 || minutes > 0 ? `${minutes}m` : '';
  return `${sign}${h}${m}${trim(seconds)}s`;
}

function trim(value: number): string {
  return String(Number(value.toFixed(9)));
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
