/**
 * Errors of the Consul client, undici style: one base class with a stable `code`, one subclass per
 * kind of failure. Requests are described by method and path only: the ACL token travels in a
 * header, and text from the server is scrubbed of every registered secret here (src/secrets.ts).
 */
import { errorMessage } from '../errorMessage.js';
import { scrubSecrets } from '../secrets.js';
import type { RetryAfterHint } from '../nomad/backoff.js';
import { NomadConnectionError, NomadDecodeError, NomadHttpError, NomadTimeoutError } from '../nomad/errors.js';

export abstract class ConsulError extends Error {
  abstract readonly code: string;

  constructor(message: string, options?: ErrorOptions) {
    super(scrubSecrets(message), options);
  }
}

/** CONSUL_* settings that cannot work (unreadable file, malformed address or boolean). */
export class ConsulConfigError extends ConsulError {
  readonly code = 'CONSUL_CONFIG_ERROR';
  override name = 'ConsulConfigError';
}

/** Consul answered with a status other than 200; `body` is its plain-text message (e.g. `ACL not found`). */
export class ConsulHttpError extends ConsulError implements RetryAfterHint {
  readonly code = 'CONSUL_HTTP_ERROR';
  override name = 'ConsulHttpError';

  /** Consul's message, scrubbed. */
  readonly body: string;

  constructor(
    readonly status: number,
    readonly method: string,
    readonly path: string,
    body: string,
    /** The answer's Retry-After in ms, when it had one. */
    readonly retryAfterMs: number | undefined = undefined,
  ) {
    super(`Consul ${method} ${path}: ${status}${body.trim() === '' ? '' : ` (${body.trim()})`}`);
    this.body = scrubSecrets(body);
  }
}

/** No usable answer: connection refused or broken, time limit passed, or a body that is not the JSON expected. */
export class ConsulUnavailableError extends ConsulError {
  readonly code = 'CONSUL_UNAVAILABLE';
  override name = 'ConsulUnavailableError';

  constructor(
    readonly reason: 'connection' | 'timeout' | 'decode',
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * The shared HTTP transport speaks in Nomad's error classes; say the same in Consul's. Anything
 * else (a bug, an abort) is passed through unchanged.
 */
export function consulErrorFrom(error: unknown, method: string, path: string): unknown {
  if (error instanceof NomadHttpError) return new ConsulHttpError(error.status, method, path, error.body, error.retryAfterMs);
  if (error instanceof NomadTimeoutError) {
    return new ConsulUnavailableError('timeout', `Consul ${method} ${path}: no answer within ${error.timeoutMs} ms`, { cause: error });
  }
  if (error instanceof NomadConnectionError) {
    const reason = errorMessage(error.cause);
    return new ConsulUnavailableError('connection', `Consul ${method} ${path}: connection failed: ${reason}`, { cause: error });
  }
  if (error instanceof NomadDecodeError) {
    return new ConsulUnavailableError('decode', `Consul ${method} ${path}: ${error.message}`, { cause: error });
  }
  return error;
}

/**
 * A supervisor's Consul source keeps trying through every Consul failure, ACL refusals included
 * (a token may be granted later): health must not go blind for good because of one bad answer.
 */
export function isConsulError(error: unknown): error is ConsulError {
  return error instanceof ConsulError;
}
