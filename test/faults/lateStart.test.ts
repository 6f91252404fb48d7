/**
 * Late start at every point of every recorded scenario: a supervisor started after each line of the
 * stream, with the cluster as it stood then, reaches the verdicts of the one that watched from the
 * start: the same verdicts, at the same times, with the same reasons (allocations long over when it
 * started included: it judges them from their history). Nomad's own answer stays in the input here:
 * where a late start's kept history cannot decide (Nomad's 10-event cap: the live recordings of
 * restarts), Nomad's recorded verdict stands for it, as the supervisor takes it.
 */
import { replayedScenarios } from '../supervisor/support/harness.js';
import { dataLines, sameOrRecorded, verdictsStartingAfter, verdictsUnder } from './support.js';

test.each(replayedScenarios())('%s: started after any line, the verdicts of the full watch', async (name) => {
  const full = await verdictsUnder(name);
  const lines = dataLines(name);
  const differences: string[] = [];
  for (let k = 0; k < lines; k++) {
    const late = await verdictsStartingAfter(name, k, { keepNomadVerdict: true });
    for (const id of new Set([...Object.keys(full), ...Object.keys(late)])) {
      if (!sameOrRecorded(full[id], late[id])) differences.push(`started after line ${k + 1} of ${lines}: allocation ${id}: ${late[id] ?? 'no verdict'} instead of ${full[id] ?? 'no verdict'}`);
    }
  }
  expect(differences).toEqual([]);
}, 300_000);
