/**
 * Reading JSON the way Nomad's agent does (Go's encoding/json), with Go's error texts: a request
 * body through json.Decoder (command/agent/http.go decodeBody: the first value is read, the rest
 * left unread; `Request body is empty` when there is none), a query parameter through
 * json.Unmarshal (the whole text must be one value). Syntax errors name the byte and the place as
 * Go's scanner does (`invalid character 'b' looking for beginning of object key string`).
 */
import { NomadApiError } from './errors.js';
import { parseLossless } from '../losslessJson.js';

class GoSyntaxError extends Error {}
/** The input ended inside a value. */
class GoEndError extends Error {}

/** Go's quoteChar: the byte as a rune in single quotes, escaped as strconv.Quote escapes it. */
function quoteChar(byte: number): string {
  if (byte === 0x27) return "'\\''";
  if (byte === 0x22) return "'\"'";
  const quoted = JSON.stringify(String.fromCharCode(byte)).slice(1, -1);
  if (byte < 0x20 || byte === 0x7f) {
    const named: Record<number, string> = { 0x07: '\\a', 0x08: '\\b', 0x0c: '\\f', 0x0a: '\\n', 0x0d: '\\r', 0x09: '\\t', 0x0b: '\\v' };
    return `'${named[byte] ?? `\\x${byte.toString(16).padStart(2, '0')}`}'`;
  }
  if (byte >= 0x80 && byte < 0xa0) return `'\\u${byte.toString(16).padStart(4, '0')}'`;
  return `'${quoted}'`;
}

const isSpace = (byte: number): boolean => byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;
const isDigit = (byte: number | undefined): boolean => byte !== undefined && byte >= 0x30 && byte <= 0x39;
const isHex = (byte: number): boolean => isDigit(byte) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66);

/** Go's scanner over one value: where it ends, or the error Go reports. */
class Scanner {
  pos = 0;

  constructor(private readonly bytes: Uint8Array) {}

  private peek(): number | undefined {
    return this.bytes[this.pos];
  }

  private next(): number {
    const byte = this.bytes[this.pos];
    if (byte === undefined) throw new GoEndError();
    this.pos += 1;
    return byte;
  }

  private fail(byte: number, context: string): never {
    throw new GoSyntaxError(`invalid character ${quoteChar(byte)} ${context}`);
  }

  skipSpace(): void {
    while (this.peek() !== undefined && isSpace(this.peek()!)) this.pos += 1;
  }

  atEnd(): boolean {
    return this.pos >= this.bytes.length;
  }

  value(): void {
    this.skipSpace();
    const byte = this.next();
    if (byte === 0x7b) return this.object();
    if (byte === 0x5b) return this.array();
    if (byte === 0x22) return this.string();
    if (byte === 0x2d || isDigit(byte)) return this.number(byte);
    if (byte === 0x74) return this.literal('true');
    if (byte === 0x66) return this.literal('false');
    if (byte === 0x6e) return this.literal('null');
    this.fail(byte, 'looking for beginning of value');
  }

  private object(): void {
    this.skipSpace();
    if (this.peek() === 0x7d) {
      this.pos += 1;
      return;
    }
    for (;;) {
      const quote = this.next();
      if (quote !== 0x22) this.fail(quote, 'looking for beginning of object key string');
      this.string();
      this.skipSpace();
      const colon = this.next();
      if (colon !== 0x3a) this.fail(colon, 'after object key');
      this.value();
      this.skipSpace();
      const after = this.next();
      if (after === 0x7d) return;
      if (after !== 0x2c) this.fail(after, 'after object key:value pair');
      this.skipSpace();
    }
  }

  private array(): void {
    this.skipSpace();
    if (this.peek() === 0x5d) {
      this.pos += 1;
      return;
    }
    for (;;) {
      this.value();
      this.skipSpace();
      const after = this.next();
      if (after === 0x5d) return;
      if (after !== 0x2c) this.fail(after, 'after array element');
    }
  }

  private string(): void {
    for (;;) {
      const byte = this.next();
      if (byte === 0x22) return;
      if (byte < 0x20) this.fail(byte, 'in string literal');
      if (byte !== 0x5c) continue;
      const escape = this.next();
      if (escape === 0x75) {
        for (let i = 0; i < 4; i++) {
          const hex = this.next();
          if (!isHex(hex)) this.fail(hex, 'in \\u hexadecimal character escape');
        }
      } else if (!'"\\/bfnrt'.includes(String.fromCharCode(escape))) {
        this.fail(escape, 'in string escape code');
      }
    }
  }

  private number(first: number): void {
    let byte: number | undefined = first;
    if (byte === 0x2d) {
      byte = this.next();
      if (!isDigit(byte)) this.fail(byte, 'in numeric literal');
    }
    if (byte !== 0x30) while (isDigit(this.peek())) this.pos += 1;
    if (this.peek() === 0x2e) {
      this.pos += 1;
      const digit = this.next();
      if (!isDigit(digit)) this.fail(digit, 'after decimal point in numeric literal');
      while (isDigit(this.peek())) this.pos += 1;
    }
    if (this.peek() === 0x65 || this.peek() === 0x45) {
      this.pos += 1;
      let digit = this.next();
      if (digit === 0x2b || digit === 0x2d) digit = this.next();
      if (!isDigit(digit)) this.fail(digit, 'in exponent of numeric literal');
      while (isDigit(this.peek())) this.pos += 1;
    }
  }

  private literal(word: string): void {
    for (let i = 1; i < word.length; i++) {
      const byte = this.next();
      if (byte !== word.charCodeAt(i)) this.fail(byte, `in literal ${word} (expecting '${word[i]!}')`);
    }
  }
}

/** Go's name for a JSON value's kind in `cannot unmarshal <kind> into Go value of type …`. */
export function goKind(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'bigint') return 'number';
  return typeof value;
}

/**
 * A request body as json.Decoder reads it: the first value (the rest left unread); `EOF` for only
 * whitespace, `Request body is empty` when the request had no body at all. 400s, as Nomad answers.
 */
export function decodeBody(text: string, noBody = false): unknown {
  if (noBody) throw new NomadApiError(400, 'Request body is empty');
  const bytes = Buffer.from(text, 'utf8');
  const scanner = new Scanner(bytes);
  scanner.skipSpace();
  if (scanner.atEnd()) throw new NomadApiError(400, 'EOF');
  const start = scanner.pos;
  try {
    scanner.value();
  } catch (error) {
    if (error instanceof GoEndError) throw new NomadApiError(400, 'unexpected EOF');
    if (error instanceof GoSyntaxError) throw new NomadApiError(400, error.message);
    throw error;
  }
  return parseLossless(bytes.subarray(start, scanner.pos).toString('utf8'));
}

/** A text as json.Unmarshal reads it: exactly one value; the error text Go gives otherwise. */
export function unmarshal(text: string): { value: unknown } | { error: string } {
  const bytes = Buffer.from(text, 'utf8');
  const scanner = new Scanner(bytes);
  try {
    scanner.value();
    scanner.skipSpace();
    const extra = bytes[scanner.pos];
    if (extra !== undefined) return { error: `invalid character ${quoteChar(extra)} after top-level value` };
  } catch (error) {
    if (error instanceof GoEndError) return { error: 'unexpected end of JSON input' };
    if (error instanceof GoSyntaxError) return { error: error.message };
    throw error;
  }
  return { value: parseLossless(text) };
}
