import { errorMessage } from '../errorMessage.js';
import { scrubSecrets } from '../secrets.js';
import type { RetryAfterHint } from './backoff.js';
/**
 * Errors of the Nomad transport, undici style: one base class with a stable `code`, one subclass
 * per kind of failure. None of them ever carries the ACL token: requests are described by method
 * and path (the token travels only in a header), and whatever text came from the server (a body, a
 * stream's error text, an excerpt) is scrubbed of every registered secret here, in the constructors
 * (src/secrets.ts): a server that echoes the token gets it printed nowhere.
 */

/** Longest piece of a body kept in an error: enough for any Nomad message, bounded for logs. */
const EXCERPT_LIMIT = 2048;

/** Nomad's texts for a refused token (nomad/structs/errors.go). */
const ACL_REFUSAL = /^(Permission denied|ACL token not found|ACL token expired)$/i;

function excerpt(text: string): string {
  return text.length <= EXCERPT_LIMIT ? text : `${text.slice(0, EXCERPT_LIMIT)}… (${text.length} chars)`;
}

export abstract class NomadError extends Error {
  abstract readonly code: string;

  constructor(message: string, options?: ErrorOptions) {
    super(scrubSecrets(message), options);
  }
}

/**
 * Nomad answered with a status other than 200. `body` is Nomad's plain-text message (for example
 * `job not found`, `Permission denied`, `Enforcing job modify index 3: …`).
 */
export class NomadHttpError extends NomadError implements RetryAfterHint {
  readonly code = 'NOMAD_HTTP_ERROR';
  /** Nomad's message (bounded in length). */
  readonly body: string;
  /** The answer's Retry-After in ms (a 429 or 503 from a rate limit or a proxy), when it had one. */
  readonly retryAfterMs: number | undefined;

  constructor(
    readonly status: number,
    readonly method: string,
    readonly path: string,
    body: string,
    options: { retryAfterMs?: number | undefined } = {},
  ) {
    // Scrubbed before it is cut, so no excerpt can end in part of a secret.
    const clean = scrubSecrets(body);
    const trimmed = excerpt(clean.trim());
    super(`Nomad ${method} ${path}: ${status}${trimmed === '' ? '' : ` (${trimmed})`}`);
    this.name = 'NomadHttpError';
    this.body = excerpt(clean);
    this.retryAfterMs = options.retryAfterMs;
  }

  /**
   * The token was refused: a 403, or Nomad's ACL texts in a 500 (Nomad up to 1.9 answers an event
   * stream the token may not read with 500 `Permission denied`).
   */
  get isPermissionDenied(): boolean {
    return this.status === 403 || (this.status === 500 && ACL_REFUSAL.test(this.body.trim()));
  }

  /** Register refused because of EnforceIndex (Nomad reports it as a 500 with this prefix). */
  get isEnforceIndexConflict(): boolean {
    return this.body.startsWith('Enforcing job modify index');
  }
}

/** A body that is not the JSON Nomad should have sent (truncated, garbled, wrong shape). */
export class NomadDecodeError extends NomadError {
  readonly code = 'NOMAD_DECODE_ERROR';
  /** The start of the offending text. */
  readonly excerpt: string;

  constructor(message: string, text: string) {
    super(message);
    this.name = 'NomadDecodeError';
    this.excerpt = scrubSecrets(text.slice(0, 200));
  }
}

/** The request did not finish within its time limit (measured on the injected clock). */
export class NomadTimeoutError extends NomadError {
  readonly code = 'NOMAD_TIMEOUT';

  constructor(
    readonly method: string,
    readonly path: string,
    readonly timeoutMs: number,
  ) {
    super(`Nomad ${method} ${path}: no answer within ${timeoutMs} ms`);
    this.name = 'NomadTimeoutError';
  }
}

/** The connection failed or broke (refused, reset, TLS verification). `cause` is undici's error. */
export class NomadConnectionError extends NomadError {
  readonly code = 'NOMAD_CONNECTION_ERROR';

  constructor(
    readonly method: string,
    readonly path: string,
    cause: unknown,
  ) {
    const reason = errorMessage(cause);
    super(`Nomad ${method} ${path}: connection failed: ${reason}`, { cause });
    this.name = 'NomadConnectionError';
  }
}

/**
 * The event stream ended or broke: raw error text from Nomad, a truncated line, a plain close, or
 * (`empty`) a close before the first byte, which is how Nomad 2.x refuses a subscription.
 */
export class NomadStreamError extends NomadError {
  readonly code = 'NOMAD_STREAM_ERROR';

  constructor(
    readonly reason: 'server-error' | 'truncated' | 'closed' | 'empty' | 'malformed' | 'idle',
    message: string,
  ) {
    super(message);
    this.name = 'NomadStreamError';
  }
}

/**
 * Worth retrying: the network, time limits, garbled or broken bodies, 408, 429 and 5xx. Any other
 * 4xx (bad parameter, ACL) will not change by asking again, nor will a refused token that Nomad
 * reports as a 500. Errors that are not NomadErrors are not retried: they are bugs to surface.
 */
export function isRetryable(error: unknown): boolean {
  if (error instanceof NomadHttpError) {
    if (error.isPermissionDenied) return false;
    return error.status >= 500 || error.status === 429 || error.status === 408;
  }
  return error instanceof NomadError;
}
