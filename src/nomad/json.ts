/**
 * JSON for Nomad bodies with exact nanosecond timestamps.
 *
 * Nomad writes Unix-nanosecond times (Allocation/Evaluation/Deployment CreateTime and ModifyTime,
 * Job SubmitTime, TaskEvent Time, RescheduleEvent RescheduleTime) as int64 numbers around 1.8e18,
 * beyond 2^53: JSON.parse rounds them. A reviver on every value would halve the event stream's
 * throughput, so the approach here is "parse, then patch":
 *
 * 1. scan the text for `<Name>":` with indexOf (memchr speed) and keep the digits of every
 *    timestamp key whose value is an unsafe integer, in text order;
 * 2. JSON.parse the untouched text;
 * 3. walk the result depth-first in key order (= text order) and replace each unsafe timestamp by
 *    the bigint of its digits, checking that the rounded value matches.
 *
 * Where the orders could differ (integer-like object keys come first in JS, pretty-printed text)
 * the check fails and a slower path rewrites the digits into strings before parsing. Only the
 * timestamp keys are made exact; any other unsafe integer stays a (rounded) number. Nomad writes
 * compact JSON unless asked for ?pretty, which Warden never does; pretty text parses, rounded.
 */
import { NomadDecodeError } from './errors.js';

const NANO_TIME_KEYS: ReadonlySet<string> = new Set([
  'Time',
  'CreateTime',
  'ModifyTime',
  'SubmitTime',
  'RescheduleTime',
]);

/** Every timestamp key ends in "Time", so one indexOf needle finds them all. */
const NEEDLE = 'Time":';
const OPEN_BRACE = 0x7b;
const COMMA = 0x2c;

function isUnsafeDigits(text: string, start: number, end: number): boolean {
  return end - start >= 16 && !Number.isSafeInteger(Number(text.slice(start, end)));
}

/** Digits of the unsafe-integer timestamp values of compact JSON text, in text order. */
function scanNanoTimes(text: string): string[] {
  const found: string[] = [];
  for (let i = text.indexOf(NEEDLE); i !== -1; i = text.indexOf(NEEDLE, i + NEEDLE.length)) {
    const start = i + NEEDLE.length;
    let end = start;
    for (let c = text.charCodeAt(end); c >= 0x30 && c <= 0x39; c = text.charCodeAt(++end));
    if (!isUnsafeDigits(text, start, end)) continue;
    // Only a key can be followed by `":` outside a string; check it opens after `{` or `,`.
    const keyStart = text.lastIndexOf('"', i);
    const before = text.charCodeAt(keyStart - 1);
    if ((before === OPEN_BRACE || before === COMMA) && NANO_TIME_KEYS.has(text.slice(keyStart + 1, i + 4))) {
      found.push(text.slice(start, end));
    }
  }
  return found;
}

function isArrayIndex(key: string): boolean {
  const c = key.charCodeAt(0);
  return c >= 0x30 && c <= 0x39 && /^(?:0|[1-9]\d{0,9})$/.test(key) && Number(key) < 2 ** 32 - 1;
}

/** Replaces unsafe timestamps in `value` by the bigints of `digits`, in order; false on mismatch. */
function patchInOrder(value: unknown, digits: readonly string[]): boolean {
  let next = 0;
  const visit = (node: unknown): boolean => {
    if (Array.isArray(node)) {
      for (const item of node) if (item !== null && typeof item === 'object' && !visit(item)) return false;
      return true;
    }
    const record = node as Record<string, unknown>;
    let first = true;
    for (const key in record) {
      // Array-index keys are enumerated first, out of text order; they would come first, so one
      // look at the first key tells whether this object keeps text order.
      if (first && isArrayIndex(key)) return false;
      first = false;
      const field = record[key];
      if (typeof field === 'number') {
        if (Number.isSafeInteger(field) || !NANO_TIME_KEYS.has(key)) continue;
        const exact = digits[next++];
        if (exact === undefined || Number(exact) !== field) return false;
        record[key] = BigInt(exact);
      } else if (field !== null && typeof field === 'object' && !visit(field)) {
        return false;
      }
    }
    return true;
  };
  return visit(value) && next === digits.length;
}

const QUOTABLE_NANO_TIME = /([{,]\s*"(?:Time|CreateTime|ModifyTime|SubmitTime|RescheduleTime)"\s*:\s*)(\d{16,})(?=\s*[,}])/g;

/** The slow, order-independent path: timestamps become strings in the text, then bigints. */
function parseQuoted(text: string): unknown {
  const value: unknown = JSON.parse(text.replace(QUOTABLE_NANO_TIME, '$1"$2"'));
  const visit = (node: unknown): void => {
    if (node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) return node.forEach(visit);
    const record = node as Record<string, unknown>;
    for (const key in record) {
      const field = record[key];
      if (typeof field === 'string' && NANO_TIME_KEYS.has(key) && /^\d{16,}$/.test(field)) record[key] = BigInt(field);
      else visit(field);
    }
  };
  visit(value);
  return value;
}

/**
 * Parses a Nomad JSON body. Nanosecond timestamps beyond 2^53 come back as exact bigints.
 * Throws NomadDecodeError (with a short excerpt, never the whole body) on malformed JSON.
 */
export function parseNomadJson(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new NomadDecodeError(`malformed JSON: ${(error as Error).message}`, text);
  }
  if (value === null || typeof value !== 'object') return value;
  const digits = scanNanoTimes(text);
  if (digits.length === 0 || patchInOrder(value, digits)) return value;
  return parseQuoted(text);
}

/** Private-use marker that cannot occur in JSON.stringify output except where we put it. */
const BIGINT_MARK = '\uE000bigint:';
const MARKED = /"\uE000bigint:(-?\d+)"/g;

/** JSON.stringify that writes bigints as bare integers, so exact timestamps go back to Nomad exact. */
export function stringifyNomadJson(value: unknown): string {
  let sawBigint = false;
  const text = JSON.stringify(value, (_key, field: unknown) => {
    if (typeof field !== 'bigint') return field;
    sawBigint = true;
    return BIGINT_MARK + field.toString();
  });
  return sawBigint ? text.replace(MARKED, '$1') : text;
}
