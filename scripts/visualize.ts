/** npm run visualize: writes visualizations/<name>.mmd for every machine in src/visualize/machines.ts. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chartsOf } from '../src/visualize/charts.js';
import { visualizedMachines } from '../src/visualize/machines.js';

const dir = join(import.meta.dirname, '..', 'visualizations');
mkdirSync(dir, { recursive: true });
for (const chart of chartsOf(visualizedMachines)) {
  writeFileSync(join(dir, chart.file), chart.text);
  console.log(`wrote visualizations/${chart.file}`);
}
