/** The chart files `npm run visualize` writes, and the check that the committed ones are current. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AnyStateMachine } from 'xstate';
import { toMermaid } from './mermaid.js';

export interface Chart {
  readonly file: string;
  readonly text: string;
}

/** The Mermaid chart of each machine, named <name>.mmd. */
export function chartsOf(machines: Readonly<Record<string, AnyStateMachine>>): Chart[] {
  return Object.entries(machines).map(([name, machine]) => ({ file: `${name}.mmd`, text: toMermaid(machine) }));
}

/** The charts whose file in `dir` is missing or differs from what the machine gives now. */
export function staleCharts(dir: string, charts: readonly Chart[]): string[] {
  return charts
    .filter((chart) => {
      try {
        return readFileSync(join(dir, chart.file), 'utf8') !== chart.text;
      } catch {
        return true;
      }
    })
    .map((chart) => chart.file);
}
