/**
 * Newline-delimited JSON framing for the event stream. Lines are cut on the 0x0A byte before any
 * UTF-8 decoding: a newline byte never occurs inside a multi-byte UTF-8 sequence, so a chunk
 * boundary anywhere (even inside a character) cannot corrupt a line, and a long line is decoded
 * once, when complete, not re-decoded per chunk.
 */
import { NomadStreamError } from './errors.js';

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/** Generous bound: a many_allocs line is ~100 KB; a whole 100-batch buffer is ~1.3 MB. */
const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024;

function asBuffer(chunk: Uint8Array): Buffer {
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

export class NdjsonDecoder {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(private readonly maxLineBytes = DEFAULT_MAX_LINE_BYTES) {}

  /** The lines this chunk completes, decoded, without newline; empty lines are skipped. */
  push(chunk: Uint8Array): string[] {
    const buffer = asBuffer(chunk);
    const lines: string[] = [];
    let start = 0;
    for (let nl = buffer.indexOf(NEWLINE); nl !== -1; nl = buffer.indexOf(NEWLINE, start)) {
      const line = this.pendingBytes === 0 ? decode(buffer, start, nl) : this.takePending(buffer.subarray(start, nl));
      if (line !== '') lines.push(line);
      start = nl + 1;
    }
    if (start < buffer.length) this.keep(buffer.subarray(start));
    return lines;
  }

  /** The unterminated rest when the stream ends ("" when it ended on a newline). */
  end(): string {
    return this.pendingBytes === 0 ? '' : this.takePending(Buffer.alloc(0));
  }

  private keep(part: Buffer): void {
    this.pendingBytes += part.length;
    if (this.pendingBytes > this.maxLineBytes) {
      this.pending = [];
      this.pendingBytes = 0;
      throw new NomadStreamError('malformed', `event stream line longer than ${this.maxLineBytes} bytes`);
    }
    // Kept as a view: the chunk it pins is at most one read (64 KiB) beyond the line itself.
    this.pending.push(part);
  }

  private takePending(last: Buffer): string {
    this.pending.push(last);
    const whole = Buffer.concat(this.pending, this.pendingBytes + last.length);
    this.pending = [];
    this.pendingBytes = 0;
    return decode(whole, 0, whole.length);
  }
}

function decode(buffer: Buffer, start: number, end: number): string {
  const stop = end > start && buffer[end - 1] === CARRIAGE_RETURN ? end - 1 : end;
  return buffer.toString('utf8', start, stop);
}
