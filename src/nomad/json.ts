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
 *    the UnixNanos of its digits (src/nomad/unixNanos.ts: exact, without a bigint), checking its
 *    key name and that the rounded value matches.
 *
 * The walk visits every field of the document, a fifth of the cost of JSON.parse itself. Where the
 * caller knows where the timestamps are (parseNomadJsonAt: event frames), only those places are
 * visited, under the same checks, with the full walk as the fallback.
 *
 * Where the orders could differ (integer-like object keys come first in JS, pretty-printed text)
 * the check fails and a slower path rewrites the digits into strings before parsing. Only the
 * timestamp keys are made exact; any other unsafe integer stays a (rounded) number. Nomad writes
 * compact JSON unless asked for ?pretty, which Warden never does; pretty text parses, rounded.
 *
 * Warden reads some of them, in milliseconds (task event times and CreateTime for health, a
 * ModifyTime for runner callbacks); the rest go to the embedder and back to Nomad
 * (stringifyNomadJson). So every one stays exact, and none is made a bigint unless asked for.
 */
import { errorMessage } from '../errorMessage.js';
import { NomadDecodeError } from './errors.js';
import { UnixNanos, unixNanosAt } from './unixNanos.js';

const NANO_TIME_KEYS: ReadonlySet<string> = new Set([
  'Time',
  'CreateTime',
  'ModifyTime',
  'SubmitTime',
  'RescheduleTime',
]);

/** Every timestamp key ends in "Time", so one indexOf needle finds them all. */
const NEEDLE = 'Time":';
/** The other keys by what comes before their "Time": matched in the text, without slicing a key out of it. */
const PREFIXED_KEYS = [...NANO_TIME_KEYS].filter((key) => key !== 'Time').map((key) => ({ key, prefix: key.slice(0, -'Time'.length) }));
const QUOTE = 0x22;
const OPEN_BRACE = 0x7b;
const COMMA = 0x2c;

/** 2^53 - 1: a 16-digit integer above it is unsafe, and every longer one is. */
const MAX_SAFE_DIGITS = String(Number.MAX_SAFE_INTEGER);

function isUnsafeDigits(text: string, start: number, end: number): boolean {
  const length = end - start;
  return length > MAX_SAFE_DIGITS.length || (length === MAX_SAFE_DIGITS.length && text.slice(start, end) > MAX_SAFE_DIGITS);
}

/** The unsafe-integer timestamps of compact JSON text, in text order: key names and where their digits are. */
interface NanoTimes {
  text: string;
  keys: string[];
  starts: number[];
  ends: number[];
}

/** The timestamp key whose quoted name ends with the "Time" at `i` (the constant itself), or undefined. */
function timestampKeyAt(text: string, i: number): string | undefined {
  if (text.charCodeAt(i - 1) === QUOTE) return 'Time';
  for (const { key, prefix } of PREFIXED_KEYS) {
    const start = i - prefix.length;
    if (text.charCodeAt(start - 1) === QUOTE && text.startsWith(prefix, start)) return key;
  }
  return undefined;
}

function scanNanoTimes(text: string): NanoTimes {
  const found: NanoTimes = { text, keys: [], starts: [], ends: [] };
  for (let i = text.indexOf(NEEDLE); i !== -1; i = text.indexOf(NEEDLE, i + NEEDLE.length)) {
    const start = i + NEEDLE.length;
    let end = start;
    for (let c = text.charCodeAt(end); c >= 0x30 && c <= 0x39; c = text.charCodeAt(++end));
    if (!isUnsafeDigits(text, start, end)) continue;
    // Only a key can be followed by `":` outside a string; check it opens after `{` or `,`. Most
    // are task events' "Time", whose quote is right before the needle.
    const key = timestampKeyAt(text, i);
    if (key === undefined) continue;
    // The key's opening quote is `key.length - 4` characters before "Time"'s, and one more before it.
    const before = text.charCodeAt(i - (key.length - 4) - 2);
    if (before !== OPEN_BRACE && before !== COMMA) continue;
    found.keys.push(key);
    found.starts.push(start);
    found.ends.push(end);
  }
  return found;
}

/**
 * Below it, `seconds · 1e9` (= seconds · 1953125 · 2^9) is a double, exactly: the check below works in
 * exact arithmetic up to year 2116.
 */
const EXACT_CHECK_SECONDS = Math.floor(Number.MAX_SAFE_INTEGER / 1_953_125);

/**
 * The exact timestamp written by the digits text[start, end) when JSON.parse read them as `rounded`
 * (an unsafe integer); undefined when they are not that number: the scan and the walk disagree.
 * Read off the digits without a bigint, and checked without one: `rounded - seconds · 1e9` is exact
 * (two doubles this close subtract exactly), so the digits are `rounded`'s when they lie within
 * half a unit of its last place, as JSON.parse's rounding leaves them (the check BigInt(digits)
 * rounded back to a double made, at a tenth of its cost).
 */
function exactAt(text: string, start: number, end: number, rounded: number): UnixNanos | undefined {
  const exact = unixNanosAt(text, start, end);
  if (exact === undefined) return undefined;
  if (exact.seconds >= EXACT_CHECK_SECONDS) return Number(text.slice(start, end)) === rounded ? exact : undefined;
  let halfUlp = 1;
  for (let bound = 2 ** 54; rounded >= bound; bound *= 2) halfUlp *= 2;
  return Math.abs(rounded - exact.seconds * 1e9 - exact.nanos) <= halfUlp ? exact : undefined;
}

function isArrayIndex(key: string): boolean {
  const c = key.charCodeAt(0);
  return c >= 0x30 && c <= 0x39 && /^(?:0|[1-9]\d{0,9})$/.test(key) && Number(key) < 2 ** 32 - 1;
}

/** Places where a document may hold a timestamp, for the patch to make exact. */
export interface TimestampPatch {
  /** Makes `holder[key]` exact when it is an unsafe timestamp (no-op for anything else). */
  field(holder: Record<string, unknown>, key: string): void;
  /** False when JS enumerates this object's keys out of text order (integer-like keys come first). */
  inTextOrder(record: object): boolean;
}

/**
 * Calls `patch.field` wherever `value` may hold a timestamp. For each key name, the calls must come
 * in text order; false when they cannot. The patch checks every call against the scan (key name,
 * rounded value, count) and falls back to the full walk on any difference.
 */
export type TimestampLocator = (value: object, patch: TimestampPatch) => boolean;

/**
 * Hands out the scanned timestamps in text order, each checked against the field it replaces.
 * The calls for one key name follow text order, and each takes the next scanned timestamp only if
 * it has that key name: so the n-th call gets the n-th occurrence of its key in the text.
 */
class InOrderPatch implements TimestampPatch {
  private next = 0;
  private failed = false;

  constructor(private readonly found: NanoTimes) {}

  field(holder: Record<string, unknown>, key: string): void {
    const field = holder[key];
    if (this.failed || typeof field !== 'number' || Number.isSafeInteger(field)) return;
    const { text, keys, starts, ends } = this.found;
    const exact = keys[this.next] === key ? exactAt(text, starts[this.next] as number, ends[this.next] as number, field) : undefined;
    if (exact === undefined) {
      this.failed = true;
      return;
    }
    this.next++;
    holder[key] = exact;
  }

  inTextOrder(record: object): boolean {
    // Array-index keys are enumerated first; they would come first, so the first key tells.
    for (const key in record) return !isArrayIndex(key);
    return true;
  }

  /** Every scanned timestamp was placed, and every one checked out. */
  get complete(): boolean {
    return !this.failed && this.next === this.found.keys.length;
  }
}

/**
 * How deep the walks below go before calling a document undecodable. Nomad's objects are a dozen
 * levels deep; a document nested thousands deep would overflow the stack at a depth that varies
 * with the JIT's frame sizes, so the same input could decode once and fail the next time. This
 * bound is far below any stack limit: the outcome depends on the input alone.
 */
const MAX_DEPTH = 1_000;

function tooDeep(depth: number): void {
  if (depth > MAX_DEPTH) throw new RangeError(`nested deeper than ${MAX_DEPTH} levels`);
}

/** The locator of any document: every field of every object, depth-first in key order. */
function everyField(value: object, patch: TimestampPatch, depth = 0): boolean {
  tooDeep(depth);
  if (Array.isArray(value)) {
    for (const item of value) if (item !== null && typeof item === 'object' && !everyField(item as object, patch, depth + 1)) return false;
    return true;
  }
  if (!patch.inTextOrder(value)) return false;
  const record = value as Record<string, unknown>;
  for (const key in record) {
    const field = record[key];
    if (typeof field === 'number') {
      if (NANO_TIME_KEYS.has(key)) patch.field(record, key);
    } else if (field !== null && typeof field === 'object' && !everyField(field, patch, depth + 1)) {
      return false;
    }
  }
  return true;
}

const QUOTABLE_NANO_TIME = /([{,]\s*"(?:Time|CreateTime|ModifyTime|SubmitTime|RescheduleTime)"\s*:\s*)(\d{16,})(?=\s*[,}])/g;

/** The slow, order-independent path: timestamps become strings in the text, then exact (a longer string than a Go int64 has: a number again). */
function parseQuoted(text: string): unknown {
  const value: unknown = JSON.parse(text.replace(QUOTABLE_NANO_TIME, '$1"$2"'));
  const visit = (node: unknown, depth: number): void => {
    if (node === null || typeof node !== 'object') return;
    tooDeep(depth);
    if (Array.isArray(node)) {
      for (const item of node) visit(item, depth + 1);
      return;
    }
    const record = node as Record<string, unknown>;
    for (const key in record) {
      const field = record[key];
      if (typeof field === 'string' && NANO_TIME_KEYS.has(key) && /^\d{16,}$/.test(field)) record[key] = unixNanosAt(field, 0, field.length) ?? Number(field);
      else visit(field, depth + 1);
    }
  };
  visit(value, 0);
  return value;
}

/**
 * V8 quotes up to ten characters of the text in some messages (`Unexpected token 'x', "xy0b6a3c1e"...
 * is not valid JSON`): a piece of a secret could sit there, cut where no scrubbing can tell. The
 * excerpt shows the text instead.
 */
const QUOTED_SOURCE = /,? ?(?:\.\.\.)?"[\s\S]*"(?:\.\.\.)? is not valid JSON$/;

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new NomadDecodeError(`malformed JSON: ${errorMessage(error).replace(QUOTED_SOURCE, ' (not valid JSON)')}`, text);
  }
}

/** Patches `value` where `locate` looks; false when that did not make every timestamp exact. */
function patchAt(text: string, value: object, locate: TimestampLocator): boolean {
  const found = scanNanoTimes(text);
  if (found.keys.length === 0) return true;
  const patch = new InOrderPatch(found);
  return locate(value, patch) && patch.complete;
}

/**
 * Runs `decode` on `text`, turning whatever it throws into a NomadDecodeError: a document nested
 * deeper than the walks go (a RangeError), or anything unforeseen. A body Warden cannot decode, for
 * any reason, must read as one, never as a broken connection or a bug.
 */
export function decoding<T>(text: string, decode: () => T): T {
  try {
    return decode();
  } catch (error) {
    if (error instanceof NomadDecodeError) throw error;
    const kind = error instanceof Error ? `${error.name}: ` : '';
    throw new NomadDecodeError(`undecodable JSON: ${kind}${errorMessage(error)}`, text);
  }
}

/**
 * Parses a Nomad JSON body. Nanosecond timestamps beyond 2^53 come back exact, as UnixNanos.
 * Throws NomadDecodeError (with a short excerpt, never the whole body) on malformed JSON, and on
 * anything else that stops the decoding (a document nested too deep).
 */
export function parseNomadJson(text: string): unknown {
  return decoding(text, () => {
    const value = parseJson(text);
    if (value === null || typeof value !== 'object' || patchAt(text, value, everyField)) return value;
    return parseQuoted(text);
  });
}

/**
 * parseNomadJson for documents whose timestamps sit where `locate` looks (an event frame): only
 * those places are patched instead of every field. Same result; when the document has timestamps
 * elsewhere, or in another order, it is parsed again by parseNomadJson.
 */
export function parseNomadJsonAt(text: string, locate: TimestampLocator): unknown {
  return decoding(text, () => {
    const value = parseJson(text);
    if (value === null || typeof value !== 'object' || patchAt(text, value, locate)) return value;
    return parseNomadJson(text);
  });
}

/**
 * The first `limit` characters of `value` written as JSON (exact timestamps and bigints as bare integers), without
 * writing the rest: an excerpt of a payload that may be huge, or nested thousands deep (each level
 * writes a character before going down, so the recursion is at most `limit` deep).
 */
export function jsonPrefix(value: unknown, limit: number): string {
  let out = '';
  const write = (node: unknown): void => {
    if (node instanceof UnixNanos) {
      out += node.toString();
    } else if (Array.isArray(node)) {
      out += '[';
      for (let i = 0; i < node.length && out.length < limit; i++) {
        if (i > 0) out += ',';
        write(node[i]);
      }
      out += ']';
    } else if (node !== null && typeof node === 'object') {
      out += '{';
      let first = true;
      for (const key in node) {
        if (out.length >= limit) break;
        out += `${first ? '' : ','}${JSON.stringify(key)}:`;
        first = false;
        write((node as Record<string, unknown>)[key]);
      }
      out += '}';
    } else {
      out += typeof node === 'bigint' ? node.toString() : (JSON.stringify(node) ?? 'null');
    }
  };
  write(value);
  return out.slice(0, limit);
}

/** Private-use marker that cannot occur in JSON.stringify output except where we put it. */
/** Marks an exact integer (a UnixNanos or a bigint) in the text, to be written bare once it is out. */
const INTEGER_MARK = '\uE000integer:';
const MARKED = /"\uE000integer:(-?\d+)"/g;

/** JSON.stringify that writes exact timestamps and bigints as bare integers, so they go back to Nomad exact. */
export function stringifyNomadJson(value: unknown): string {
  let marked = false;
  // `this[key]` is the field before its toJSON (a UnixNanos writes itself as a string).
  const text = JSON.stringify(value, function (this: Record<string, unknown>, key: string, field: unknown) {
    const raw = this[key];
    if (typeof raw !== 'bigint' && !(raw instanceof UnixNanos)) return field;
    marked = true;
    return INTEGER_MARK + raw.toString();
  });
  return marked ? text.replace(MARKED, '$1') : text;
}
