import fc from 'fast-check';
import { NdjsonDecoder } from '../../src/nomad/ndjson.js';
import { NomadStreamError } from '../../src/nomad/errors.js';

/** Feeds `bytes` cut at `cuts` and collects every line plus the unterminated rest. */
function decodeInPieces(bytes: Buffer, cuts: number[]): { lines: string[]; rest: string } {
  const decoder = new NdjsonDecoder();
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const lines: string[] = [];
  let start = 0;
  for (const point of [...points, bytes.length]) {
    lines.push(...decoder.push(bytes.subarray(start, point)));
    start = point;
  }
  return { lines, rest: decoder.end() };
}

describe('NdjsonDecoder', () => {
  it('gives the same lines whatever the chunk boundaries, even inside UTF-8 characters', () => {
    const line = fc.string({ unit: 'grapheme', maxLength: 40 }).map((s) => s.replace(/\n/g, ''));
    fc.assert(
      fc.property(fc.array(line, { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 12 }), (texts, cuts) => {
        const bytes = Buffer.from(texts.map((t) => `${t}\n`).join(''), 'utf8');
        const { lines, rest } = decodeInPieces(bytes, cuts);
        expect(lines).toEqual(texts.filter((t) => t !== '' && t !== '\r').map((t) => t.replace(/\r$/, '')));
        expect(rest).toBe('');
      }),
      { seed: 3, numRuns: 300 },
    );
  });

  it('splits a 4-byte character across three chunks', () => {
    const bytes = Buffer.from('{"Message":"🦀 ok"}\n', 'utf8');
    const crab = bytes.indexOf(0xf0);
    const { lines } = decodeInPieces(bytes, [crab + 1, crab + 3]);
    expect(lines).toEqual(['{"Message":"🦀 ok"}']);
  });

  it('reassembles a line of several megabytes delivered in small chunks', () => {
    const long = `{"Index":7,"Events":[{"Payload":"${'é'.repeat(600_000)}"}]}`;
    const bytes = Buffer.from(`{}\n${long}\n{}\n`, 'utf8');
    const cuts = Array.from({ length: Math.ceil(bytes.length / 16384) }, (_, i) => i * 16384 + 7);
    expect(decodeInPieces(bytes, cuts).lines).toEqual(['{}', long, '{}']);
  });

  it('returns the unterminated rest at the end (error text Nomad appends before closing)', () => {
    const bytes = Buffer.from('{}\n{"Index":3,"Events":[]}\nsubscription closed by server, client should resubscribe');
    const { lines, rest } = decodeInPieces(bytes, [5, 30]);
    expect(lines).toEqual(['{}', '{"Index":3,"Events":[]}']);
    expect(rest).toBe('subscription closed by server, client should resubscribe');
  });

  it('refuses a line beyond its bound with a NomadStreamError instead of growing without end', () => {
    const decoder = new NdjsonDecoder(1024);
    decoder.push(Buffer.alloc(1000, 0x61));
    expect(() => decoder.push(Buffer.alloc(100, 0x61))).toThrow(NomadStreamError);
    expect(decoder.push(Buffer.from('next\n'))).toEqual(['next']);
  });
});
