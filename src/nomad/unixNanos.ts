/**
 * An exact Unix-nanosecond timestamp as Nomad wrote it, kept as whole seconds and the nanoseconds
 * within that second: two doubles, each exact, where one double would round (Nomad's timestamps
 * are about 1.8e18, beyond 2^53).
 *
 * Warden's decoder makes one for every timestamp of every event (src/nomad/json.ts); most are never
 * read. A bigint would be exact too, but building one from the digits costs about ten times the
 * two integers read off the same digits, and it is paid for every timestamp, read or not. So the
 * exact integer is built only when asked for (`toBigInt`, or `<` / `>` / `==`, which go through
 * valueOf), and the health rules read milliseconds with plain arithmetic (src/health/nomadTime.ts).
 */
import { digitsAt } from '../decimalDigits.js';

const BIG_NANOS_PER_SECOND = 1_000_000_000n;

export class UnixNanos {
  /**
   * @param seconds whole seconds since the Unix epoch (a safe integer ≥ 0)
   * @param nanos nanoseconds within that second (an integer, 0–999,999,999)
   */
  constructor(
    readonly seconds: number,
    readonly nanos: number,
  ) {}

  /** The timestamp of a non-negative integer number of nanoseconds. */
  static fromBigInt(value: bigint): UnixNanos {
    if (value < 0n) throw new RangeError(`a Unix time in nanoseconds is not negative: ${value}`);
    const seconds = value / BIG_NANOS_PER_SECOND;
    if (seconds > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`${value} ns is beyond the safe range of seconds`);
    return new UnixNanos(Number(seconds), Number(value % BIG_NANOS_PER_SECOND));
  }

  /** The exact integer, built on each call. */
  toBigInt(): bigint {
    return BigInt(this.seconds) * BIG_NANOS_PER_SECOND + BigInt(this.nanos);
  }

  /**
   * So that `<`, `>` and `==` compare it with bigints, numbers and other UnixNanos exactly, as they
   * did bigint timestamps; `Number(time)` rounds it as it rounds a bigint.
   */
  valueOf(): bigint {
    return this.toBigInt();
  }

  /** Milliseconds since the epoch, microseconds kept as a fraction (the nanoseconds below cut off). */
  get ms(): number {
    return (this.seconds * 1_000_000 + Math.floor(this.nanos / 1000)) / 1000;
  }

  /** Whole milliseconds since the epoch (cut, not rounded: two times in one millisecond are equal). */
  get wholeMs(): number {
    return this.seconds * 1000 + Math.floor(this.nanos / 1_000_000);
  }

  /** The decimal digits Nomad writes. */
  toString(): string {
    if (this.seconds === 0) return String(this.nanos);
    return `${this.seconds}${String(this.nanos).padStart(9, '0')}`;
  }

  /** Plain JSON.stringify cannot write a bare integer this large exactly: a string of its digits. stringifyNomadJson writes the bare integer. */
  toJSON(): string {
    return this.toString();
  }
}

/**
 * The UnixNanos written by the decimal digits text[start, end) (the caller has checked they are
 * digits), or undefined when its seconds are beyond Number.MAX_SAFE_INTEGER (a Go int64 has at most 19
 * digits, under 10^10 s).
 */
export function unixNanosAt(text: string, start: number, end: number): UnixNanos | undefined {
  const split = Math.max(start, end - 9);
  const seconds = digitsAt(text, start, split - start);
  return Number.isSafeInteger(seconds) ? new UnixNanos(seconds, digitsAt(text, split, end - split)) : undefined;
}
