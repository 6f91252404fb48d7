/** The recording every benchmark is built from: Nomad 1.1.2's many_allocs scenario (see the fixtures README). */
import { join } from 'node:path';
import { readScenario, type Scenario } from '../../src/testing/recording.js';

export function manyAllocs(): Scenario {
  return readScenario(join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'nomad-1.1.2', 'scenarios', 'many_allocs'));
}
