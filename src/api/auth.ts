/**
 * Poseidon's authentication (internal/api/auth): when a token is configured, every route but
 * /health and /version needs it in the `Poseidon-Token` header, else 401 with no body. Compared in
 * constant time (digests of equal length), never logged, never echoed.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export const TOKEN_HEADER = 'poseidon-token';

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/** Whether a request's headers carry `token`; with no token configured, every request passes. */
export function tokenCheck(token: string | undefined): (headers: IncomingHttpHeaders) => boolean {
  if (token === undefined || token === '') return () => true;
  const expected = digest(token);
  return (headers) => {
    const given = headers[TOKEN_HEADER];
    return typeof given === 'string' && timingSafeEqual(digest(given), expected);
  };
}
