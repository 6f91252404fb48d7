/**
 * JSON that keeps Nomad's int64 values exact. Nanosecond timestamps (CreateTime, TaskEvent Time)
 * exceed 2^53, so `JSON.parse` would round them: integers outside the safe range become bigints
 * here (every one, not only the timestamp keys src/nomad/json.ts knows, since recordings are read
 * whole), and `stringifyLossless` (the client's writer) puts bigints back as bare digits. Plain
 * JSON.parse does the real work; only the big digit runs are routed around it.
 */

/** JSON.stringify that writes bigints as bare integers (and so round-trips parseLossless). */
export { stringifyNomadJson as stringifyLossless } from '../nomad/json.js';

/** A JSON document whose unsafe integers are bigints. */
export type LosslessJson = null | boolean | number | bigint | string | LosslessJson[] | { [key: string]: LosslessJson };

const MARK = '\u0000int:';

// A string token is consumed whole, so digits inside strings never match the second branch.
const BIG_INTEGER = /"(?:[^"\\]|\\.)*"|(?<![\d.eE+-])(-?\d{16,})(?![\d.eE])/g;

/** Parses JSON text; integers beyond Number.MAX_SAFE_INTEGER come back as bigint. */
export function parseLossless(text: string): LosslessJson {
  let marked = false;
  const protectedText = text.replace(BIG_INTEGER, (token: string, digits: string | undefined) => {
    if (digits === undefined || Number.isSafeInteger(Number(digits))) return token;
    marked = true;
    return `"\\u0000int:${digits}"`;
  });
  if (!marked) return JSON.parse(text) as LosslessJson;
  return JSON.parse(protectedText, (_key, value: unknown) =>
    typeof value === 'string' && value.startsWith(MARK) ? BigInt(value.slice(MARK.length)) : value,
  ) as LosslessJson;
}
