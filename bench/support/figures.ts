/** The command-line options and statistics every benchmark reads its figures with. */

/** `--<name> <number>` from the command line, else `fallback`. */
export function numberOption(name: string, fallback: number): number {
  const args = process.argv.slice(2);
  const at = args.indexOf(`--${name}`);
  return at === -1 ? fallback : Number(args[at + 1]);
}

/** The middle of `values` (the mean of the two middle ones for an even count): one slow run does not move it. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

/** The value below which a fraction `p` of `values` lie (nearest rank). */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))] ?? 0;
}

export const round = (value: number, digits = 2): number => Number(value.toFixed(digits));

/** CPU time this process has used (user + system, every thread), ms. */
export function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** The least-squares line y = a + slope·x, with the standard error of its slope (0 for fewer than three points). */
export function slope(xs: readonly number[], ys: readonly number[]): { slope: number; standardError: number } {
  const n = Math.min(xs.length, ys.length);
  if (n < 2) return { slope: 0, standardError: 0 };
  const mean = (values: readonly number[]): number => values.slice(0, n).reduce((sum, v) => sum + v, 0) / n;
  const mx = mean(xs);
  const my = mean(ys);
  let sxx = 0;
  let sxy = 0;
  for (let i = 0; i < n; i++) {
    sxx += (xs[i]! - mx) ** 2;
    sxy += (xs[i]! - mx) * (ys[i]! - my);
  }
  if (sxx === 0) return { slope: 0, standardError: 0 };
  const b = sxy / sxx;
  let residuals = 0;
  for (let i = 0; i < n; i++) residuals += (ys[i]! - (my + b * (xs[i]! - mx))) ** 2;
  return { slope: b, standardError: n > 2 ? Math.sqrt(residuals / (n - 2) / sxx) : 0 };
}
