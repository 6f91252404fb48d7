/**
 * Figures a live suite measures (delays, agreement counts), written one JSON line each to the file
 * the live tier's runner names, which prints them summed up at the end of the run.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';

export interface Figure {
  /** What was measured, e.g. `verdict delay after Nomad's health update (ms)`. */
  readonly name: string;
  readonly value: number;
  /** Where it was measured (suite and case), for reading the raw file. */
  readonly where?: string;
}

/** Appends one measurement; a no-op outside the live tier's runner. */
export function recordFigure(figure: Figure): void {
  const file = process.env.WARDEN_LIVE_FIGURES;
  if (file) appendFileSync(file, `${JSON.stringify(figure)}\n`);
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}

/** Each figure's count, sum, p50, p90 and max, by name. */
export function summarizeFigures(file: string): Record<string, { count: number; sum: number; p50: number; p90: number; max: number }> {
  if (!existsSync(file)) return {};
  const byName = new Map<string, number[]>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line === '') continue;
    const { name, value } = JSON.parse(line) as Figure;
    byName.set(name, [...(byName.get(name) ?? []), value]);
  }
  const summary: Record<string, { count: number; sum: number; p50: number; p90: number; max: number }> = {};
  for (const [name, values] of [...byName].sort(([a], [b]) => a.localeCompare(b))) {
    const sorted = [...values].sort((a, b) => a - b);
    const round = (n: number): number => Math.round(n * 1000) / 1000;
    summary[name] = { count: sorted.length, sum: round(sorted.reduce((a, b) => a + b, 0)), p50: round(percentile(sorted, 50)), p90: round(percentile(sorted, 90)), max: round(sorted.at(-1) as number) };
  }
  return summary;
}
