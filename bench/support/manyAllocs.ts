/** The recordings benchmarks are built from: Nomad 1.1.2's scenarios (see the fixtures README), many_allocs above all. */
import { join } from 'node:path';
import { readScenario, type Scenario } from '../../src/testing/recording.js';

export function recordedScenario(name: string): Scenario {
  return readScenario(join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'nomad-1.1.2', 'scenarios', name));
}

export function manyAllocs(): Scenario {
  return recordedScenario('many_allocs');
}
