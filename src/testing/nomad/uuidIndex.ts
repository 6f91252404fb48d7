/**
 * How Nomad 1.1.2's state store reads an ID it is given for an allocation, evaluation, deployment or
 * node table (go-memdb UUIDFieldIndex, hex.DecodeString in Go 1.16): a prefix must be hexadecimal,
 * dashes anywhere (at most 4), an even number of digits without them, at most 36 characters; a
 * whole ID must also be exactly 36 characters. Both are compared as the bytes they decode to, so
 * upper case and dashes in other places name the same objects. Measured on a real 1.1.2 agent
 * (test/conformance/prefixes.test.ts): `GET /v1/allocations?prefix=zz` answers 500
 * `alloc lookup failed: index error: Invalid UUID: encoding/hex: invalid byte: U+007A 'z'`.
 */
import { NomadApiError } from './errors.js';

/** Go's `%#U` of a byte read as a rune: `U+007A 'z'`, without the quoted character when not printable. */
function goRune(byte: number): string {
  const code = `U+${byte.toString(16).toUpperCase().padStart(4, '0')}`;
  const printable = (byte >= 0x20 && byte <= 0x7e) || (byte >= 0xa1 && byte !== 0xad);
  return printable ? `${code} '${String.fromCharCode(byte)}'` : code;
}

const isHexByte = (byte: number): boolean => (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66);

/**
 * The hex digits (lower case, no dashes) an ID or prefix stands for, or the state store's error
 * (UUIDFieldIndex.parseString), as `index error: …` reports it.
 */
export function uuidDigits(text: string, whole: boolean): { digits: string } | { error: string } {
  const raw = Buffer.from(text, 'utf8');
  if (whole && raw.length !== 36) return { error: 'UUID must be 36 characters' };
  if (raw.length > 36) return { error: `Invalid UUID length. UUID have 36 characters; got ${raw.length}` };
  const hyphens = raw.filter((byte) => byte === 0x2d).length;
  if (hyphens > 4) return { error: `UUID should have maximum of 4 "-"; got ${hyphens}` };
  const sanitized = raw.filter((byte) => byte !== 0x2d);
  if (sanitized.length % 2 !== 0) return { error: 'Input (without hyphens) must be even length' };
  const invalid = sanitized.find((byte) => !isHexByte(byte));
  if (invalid !== undefined) return { error: `Invalid UUID: encoding/hex: invalid byte: ${goRune(invalid)}` };
  return { digits: Buffer.from(sanitized).toString('latin1').toLowerCase() };
}

/** The digits of a prefix or ID, or the 500 Nomad answers: `<lead>index error: <why>`. */
export function requireUuidDigits(text: string, whole: boolean, lead: string): string {
  const parsed = uuidDigits(text, whole);
  if ('error' in parsed) throw new NomadApiError(500, `${lead}index error: ${parsed.error}`);
  return parsed.digits;
}

/** Whether a stored ID starts with the bytes of `prefix` (digits as uuidDigits gives them). */
export function matchesUuidPrefix(id: string, digits: string): boolean {
  return id.replace(/-/g, '').toLowerCase().startsWith(digits);
}

/** The canonical 8-4-4-4-12 form of 32 digits: how the fake's tables key their objects. */
export function canonicalUuid(digits: string): string {
  return `${digits.slice(0, 8)}-${digits.slice(8, 12)}-${digits.slice(12, 16)}-${digits.slice(16, 20)}-${digits.slice(20, 32)}`;
}

/**
 * The key a whole ID names in a table, or the lookup's 500 (`<lead>index error: …`, the lead being
 * e.g. `alloc lookup failed: `). IDs not 32 digits long decode to no stored UUID: their own text.
 */
export function uuidKey(text: string, lead: string): string {
  const digits = requireUuidDigits(text, true, lead);
  return digits.length === 32 ? canonicalUuid(digits) : text;
}
