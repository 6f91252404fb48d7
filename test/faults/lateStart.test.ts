/**
 * Late start at every point of every recorded scenario: a supervisor started after each line of the
 * stream, with the cluster as it stood then, reaches the verdicts of the one that watched from the
 * start: the same verdicts, at the same times, with the same reasons (allocations long over when it
 * started included: it judges them from their history).
 */
import { listScenarios } from '../../src/testing/recording.js';
import { SCENARIOS } from '../supervisor/support/harness.js';
import { dataLines, verdictsStartingAfter, verdictsUnder } from './support.js';

test.each(listScenarios(SCENARIOS))('%s: started after any line, the verdicts of the full watch', async (name) => {
  const full = await verdictsUnder(name);
  const lines = dataLines(name);
  const differences: string[] = [];
  for (let k = 0; k < lines; k++) {
    const late = await verdictsStartingAfter(name, k);
    for (const id of new Set([...Object.keys(full), ...Object.keys(late)])) {
      if (full[id] !== late[id]) differences.push(`started after line ${k + 1} of ${lines}: allocation ${id}: ${late[id] ?? 'no verdict'} instead of ${full[id] ?? 'no verdict'}`);
    }
  }
  expect(differences).toEqual([]);
}, 300_000);
