import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseNomadJson, stringifyNomadJson } from '../../src/nomad/json.js';
import { NomadDecodeError } from '../../src/nomad/errors.js';
import { UnixNanos } from '../../src/nomad/unixNanos.js';

const exact = (nanoseconds: bigint): UnixNanos => UnixNanos.fromBigInt(nanoseconds);

const fixtures = join(__dirname, '..', 'fixtures', 'nomad-1.1.2');

function streamLines(scenario: string): string[] {
  return readFileSync(join(fixtures, 'scenarios', scenario, 'stream.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => (JSON.parse(line) as { raw: string }).raw);
}

/** Every `"<key>":<digits>` of the text for the timestamp keys, in order. */
function timestampDigits(text: string): string[] {
  return [...text.matchAll(/"(?:Time|CreateTime|ModifyTime|SubmitTime|RescheduleTime)":(\d+)/g)].map((m) => m[1]!);
}

function collectTimestamps(value: unknown, out: unknown[] = []): unknown[] {
  if (Array.isArray(value)) value.forEach((item) => collectTimestamps(item, out));
  else if (value !== null && typeof value === 'object') {
    for (const [key, field] of Object.entries(value)) {
      if (['Time', 'CreateTime', 'ModifyTime', 'SubmitTime', 'RescheduleTime'].includes(key) && (field instanceof UnixNanos || typeof field === 'number')) out.push(field);
      else collectTimestamps(field, out);
    }
  }
  return out;
}

describe('parseNomadJson', () => {
  it('returns every nanosecond timestamp of a recorded stream exactly, as UnixNanos', () => {
    const lines = [...streamLines('healthy_task_states'), ...streamLines('many_allocs')];
    let checked = 0;
    for (const line of lines) {
      const expected = timestampDigits(line);
      const actual = collectTimestamps(parseNomadJson(line));
      expect(actual.map(String)).toEqual(expected);
      for (const value of actual) expect(value).toBeInstanceOf(UnixNanos);
      checked += expected.length;
    }
    expect(checked).toBeGreaterThan(1000);
  });

  it('parses everything else exactly as JSON.parse does', () => {
    const line = streamLines('failed_task')[3]!;
    const plain = JSON.parse(line) as unknown;
    const exact = parseNomadJson(line);
    const asNumbers = JSON.parse(stringifyNomadJson(exact)) as unknown;
    expect(asNumbers).toEqual(plain);
  });

  it('keeps small integers and unrelated big integers as numbers', () => {
    const value = parseNomadJson('{"Time":5,"Index":12345678901234567890,"KillTimeout":5000000000}') as Record<string, unknown>;
    expect(value).toEqual({ Time: 5, Index: Number('12345678901234567890'), KillTimeout: 5000000000 });
  });

  it('leaves digits inside strings alone', () => {
    const text = '{"Message":"x\\"Time\\":1795971902180095019,","Time":1795971902180095019}';
    expect(parseNomadJson(text)).toEqual({ Message: 'x"Time":1795971902180095019,', Time: exact(1795971902180095019n) });
  });

  it('is exact when integer-like keys reorder the object (the slow path)', () => {
    const text = '{"b":{"CreateTime":1795971902180095019},"7":{"CreateTime":1795971902180095023}}';
    expect(parseNomadJson(text)).toEqual({ b: { CreateTime: exact(1795971902180095019n) }, 7: { CreateTime: exact(1795971902180095023n) } });
  });

  it('throws a NomadDecodeError for malformed JSON, with a bounded excerpt', () => {
    const text = `{"Index":1,"Events":[${'x'.repeat(5000)}`;
    expect(() => parseNomadJson(text)).toThrow(NomadDecodeError);
    try {
      parseNomadJson(text);
    } catch (error) {
      expect((error as NomadDecodeError).excerpt.length).toBeLessThanOrEqual(200);
    }
  });

  it('throws a NomadDecodeError, never a stack overflow, for a document nested deeper than its walk goes (1,000 levels)', () => {
    // JSON.parse takes them; the walk that makes the timestamps exact stops at 1,000 levels, at any depth beyond.
    const nested = (depth: number) => `{"ModifyTime":1795971902180095019,"Deep":${'{"a":'.repeat(depth)}{"Time":1795971902180095019}${'}'.repeat(depth)}}`;
    for (const depth of [1_000, 5_000, 50_000]) {
      expect(() => JSON.parse(nested(depth))).not.toThrow();
      expect(() => parseNomadJson(nested(depth))).toThrow(new NomadDecodeError('undecodable JSON: RangeError: nested deeper than 1000 levels', ''));
    }
    let inner: unknown = parseNomadJson(nested(998));
    for (let level = 0; level < 999; level++) inner = (inner as { Deep?: unknown; a?: unknown }).Deep ?? (inner as { a: unknown }).a;
    expect(inner).toEqual({ Time: exact(1795971902180095019n) });
  });
});

describe('stringifyNomadJson', () => {
  it('writes exact timestamps and bigints as bare integers that parse back exactly', () => {
    const value = { Job: { ID: 'web', SubmitTime: exact(1795971902180095019n), CreateTime: 1795971902180095023n, Meta: { note: 'bigint:1' } } };
    const text = stringifyNomadJson(value);
    expect(text).toBe('{"Job":{"ID":"web","SubmitTime":1795971902180095019,"CreateTime":1795971902180095023,"Meta":{"note":"bigint:1"}}}');
    expect(parseNomadJson(text)).toEqual({ Job: { ...value.Job, CreateTime: exact(1795971902180095023n) } });
  });

  it('leaves a string of digits a string (only an exact timestamp is written bare)', () => {
    expect(stringifyNomadJson({ Time: '1795971902180095019' })).toBe('{"Time":"1795971902180095019"}');
  });
});
