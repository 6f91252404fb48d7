/** Deterministic randomness for the fake: UUIDs and jitter come from one seeded generator. */
import { seededRandom } from '../../random.js';

export class SeededRandom {
  /** A uniform float in [0, 1). */
  readonly next: () => number;

  constructor(seed: number) {
    this.next = seededRandom(seed);
  }

  /** A Nomad-style UUID (8-4-4-4-12 lower-case hex). */
  uuid(): string {
    let hex = '';
    while (hex.length < 32) hex += Math.floor(this.next() * 0x100000000).toString(16).padStart(8, '0');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
  }
}
