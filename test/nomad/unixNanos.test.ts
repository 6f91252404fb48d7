import { parseNomadJson, parseNomadJsonAt, type TimestampLocator } from '../../src/nomad/json.js';
import { UnixNanos, unixNanosAt } from '../../src/nomad/unixNanos.js';
import { nanoTimeMs, nanoTimeToMs, parseNanoTime } from '../../src/health/nomadTime.js';
import { seededRandom } from '../../src/random.js';

/** A deterministic spread of integers, `digits` long. */
function integers(count: number, digits: number, seed: number): bigint[] {
  const next = seededRandom(seed);
  return Array.from({ length: count }, () => {
    let text = String(1 + Math.floor(next() * 9));
    while (text.length < digits) text += String(Math.floor(next() * 10));
    return BigInt(text);
  });
}

const INT64_MAX = 2n ** 63n - 1n;

describe('UnixNanos', () => {
  const samples = [...integers(500, 19, 1), ...integers(200, 16, 2), 0n, 5n, 1_000_000_000n, 1_795_971_902_000_000_007n, INT64_MAX];

  it('is the integer it was made of, in digits, as a bigint and in milliseconds as the bigint reads', () => {
    for (const value of samples) {
      const time = UnixNanos.fromBigInt(value);
      expect(time.toBigInt()).toBe(value);
      expect(time.toString()).toBe(value.toString());
      expect(time.ms).toBe(Number(value / 1000n) / 1000);
      expect(time.wholeMs).toBe(Number(value / 1_000_000n));
      expect(nanoTimeMs(time)).toBe(nanoTimeMs(value));
      expect(nanoTimeToMs(time)).toBe(nanoTimeToMs(value));
    }
  });

  it('compares exactly with < and > against other UnixNanos, and through valueOf with bigints and numbers', () => {
    const [a, b] = [1795971902180095019n, 1795971902180095023n];
    const [x, y] = [UnixNanos.fromBigInt(a), UnixNanos.fromBigInt(b)];
    // One double for both: only an exact comparison tells them apart.
    expect(Number(a)).toBe(Number(b));
    expect(x < y && y > x && !(y < x)).toBe(true);
    expect(x.valueOf() === a && y.valueOf() === b).toBe(true);
    // What `<` does with a bigint or a number beside it (TypeScript types it only between two objects).
    expect(x.valueOf() < b && y.valueOf() > a && UnixNanos.fromBigInt(5n).valueOf() < 6).toBe(true);
    // Number() rounds it as it rounds the bigint (so code that read bigint timestamps reads these).
    expect(Number(x)).toBe(Number(a));
  });

  it('writes its digits as a JSON string for JSON.stringify (a bare integer would be rounded by JSON.parse)', () => {
    expect(JSON.stringify({ Time: UnixNanos.fromBigInt(1795971902180095019n) })).toBe('{"Time":"1795971902180095019"}');
  });

  it('refuses what is not a Unix time in nanoseconds it can hold', () => {
    expect(() => UnixNanos.fromBigInt(-1n)).toThrow(RangeError);
    expect(() => UnixNanos.fromBigInt(BigInt(Number.MAX_SAFE_INTEGER) * 1_000_000_000n * 10n)).toThrow(RangeError);
    const largest = `${Number.MAX_SAFE_INTEGER}999999999`;
    expect(unixNanosAt(largest, 0, largest.length)?.toString()).toBe(largest);
    expect(unixNanosAt(`${Number.MAX_SAFE_INTEGER + 1}000000000`, 0, largest.length)).toBeUndefined();
  });

  it('is unset at zero and set above it, as bigints and numbers are', () => {
    expect(parseNanoTime(UnixNanos.fromBigInt(0n))).toEqual({ ok: true, ms: null });
    expect(parseNanoTime(UnixNanos.fromBigInt(1_000_000n))).toEqual({ ok: true, ms: 1 });
  });
});

describe('the decoder reading exact times off the digits', () => {
  it('is exact for every int64 size of timestamp, at either side of each rounding', () => {
    // Digits each side of a double's rounding boundary (half a unit of its last place) and at it, in
    // the ranges with a different unit, and past 4.6e18 s·1e9, where the check takes its slow path.
    const bases = [2n ** 53n + 1n, 2n ** 57n, 1795971902180095019n, 2n ** 61n - 3n, 4611686018427387904n, INT64_MAX - 300n];
    const values = [...bases.flatMap((base) => Array.from({ length: 300 }, (_, i) => base + BigInt(i))), ...integers(2000, 19, 3).filter((v) => v <= INT64_MAX), ...integers(300, 17, 4)];
    for (const value of values) {
      const decoded = parseNomadJson(`{"Events":[{"Time":${value}}]}`) as { Events: [{ Time: unknown }] };
      expect(decoded.Events[0].Time).toBeInstanceOf(UnixNanos);
      expect((decoded.Events[0].Time as UnixNanos).toBigInt()).toBe(value);
    }
  });

  it('takes no digits that are not the value JSON.parse read there (a walk out of text order)', () => {
    // A locator visiting the two fields in the reverse of text order: each is offered the other's
    // digits, which the check must refuse (then the full walk makes both exact). Two apart by a
    // microsecond, and two on neighbouring doubles (256 ns apart at this size).
    const reversed: TimestampLocator = (value, patch) => {
      const record = value as { a: Record<string, unknown>; b: Record<string, unknown> };
      patch.field(record.b, 'Time');
      patch.field(record.a, 'Time');
      return true;
    };
    for (const [a, b] of [
      [1795971902180095019n, 1795971902180096019n],
      [1795971902180095019n, 1795971902180095019n + 256n],
    ] as const) {
      expect(Number(a)).not.toBe(Number(b));
      const decoded = parseNomadJsonAt(`{"a":{"Time":${a}},"b":{"Time":${b}}}`, reversed) as { a: { Time: UnixNanos }; b: { Time: UnixNanos } };
      expect([decoded.a.Time.toBigInt(), decoded.b.Time.toBigInt()]).toEqual([a, b]);
    }
  });
});
