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
