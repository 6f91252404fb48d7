/**
 * Decoding a request body the way Nomad's agent does (Go encoding/json), with Go's error texts for
 * the mistakes clients make: an empty body, truncated JSON, a stray character.
 */
import { NomadApiError } from './errors.js';
import { parseLossless } from '../losslessJson.js';

export function decodeBody(text: string): unknown {
  if (text.trim() === '') throw new NomadApiError(400, 'EOF');
  try {
    return parseLossless(text);
  } catch (error) {
    throw new NomadApiError(400, goSyntaxError(text, error instanceof Error ? error.message : ''));
  }
}

function goSyntaxError(text: string, message: string): string {
  if (/end of JSON input|Unterminated string/i.test(message)) return 'unexpected EOF';
  const position = /position (\d+)/.exec(message);
  const at = position ? Number(position[1]) : 0;
  const char = text[at];
  if (char === undefined) return 'unexpected EOF';
  return `invalid character '${char}' looking for beginning of value`;
}
