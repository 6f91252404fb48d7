/**
 * Where Warden's randomness comes from: every jitter takes a RandomSource, so a test, a fault run or
 * a replay injects a seeded one and repeats exactly. Unseeded runs share one generator seeded from the
 * operating system's randomness when the process starts.
 */
import { randomInt } from 'node:crypto';

/** Uniform draws in [0, 1). */
export type RandomSource = () => number;

/** mulberry32 from `seed`: small, fast, and the same sequence for the same seed on every platform. */
export function seededRandom(seed: number): RandomSource {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The source used where none is injected. */
export const processRandom: RandomSource = seededRandom(randomInt(2 ** 32));
