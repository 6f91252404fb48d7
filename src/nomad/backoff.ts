/**
 * How long to wait before retrying: exponential back-off with jitter, as a pure function of the
 * attempt number, stretched to what the server asked for in Retry-After.
 */
import { processRandom, type RandomSource } from '../random.js';

export interface BackoffOptions {
  /** Delay ceiling of the first retry, ms (default 500). */
  initialMs?: number;
  /** Ceiling of any delay, ms (default 30 s); also caps how long a server's Retry-After is honoured. */
  maxMs?: number;
  /** Growth per attempt (default 2). */
  factor?: number;
  /** Source of jitter in [0, 1); inject a seeded one for deterministic runs (default: processRandom). */
  random?: RandomSource;
}

const DEFAULT_MAX_MS = 30_000;

/**
 * Delay before retry number `attempt` (1 = first retry): "equal jitter", half of the exponential
 * ceiling fixed plus up to half at random, so retries spread out yet never collapse to zero.
 */
export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  const { initialMs = 500, maxMs = DEFAULT_MAX_MS, factor = 2, random = processRandom } = options;
  const ceiling = Math.min(maxMs, initialMs * factor ** Math.max(0, attempt - 1));
  return ceiling / 2 + (ceiling / 2) * Math.min(Math.max(random(), 0), 1);
}

/** An error that says when the server wants to be asked again (an HTTP answer's Retry-After). */
export interface RetryAfterHint {
  /** How long the server asked to wait, ms, from when it answered; undefined when it did not say. */
  readonly retryAfterMs: number | undefined;
}

function retryAfterOf(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null || !('retryAfterMs' in error)) return undefined;
  const { retryAfterMs } = error as RetryAfterHint;
  return typeof retryAfterMs === 'number' && Number.isFinite(retryAfterMs) ? retryAfterMs : undefined;
}

/**
 * Delay before retry number `attempt` after `error`: the back-off delay, or longer when the server
 * said how long to wait (429/503 with Retry-After), at most `maxMs` so a hostile or mistaken
 * server cannot park a client for hours.
 */
export function retryDelay(attempt: number, error: unknown, options: BackoffOptions = {}): number {
  const delay = backoffDelay(attempt, options);
  const asked = retryAfterOf(error);
  return asked === undefined ? delay : Math.max(delay, Math.min(asked, options.maxMs ?? DEFAULT_MAX_MS));
}

const DELTA_SECONDS = /^\d+$/;
/** asctime's form has no zone; HTTP dates are always GMT, and Date.parse would take local time. */
const ASCTIME = /^[A-Za-z]{3} [A-Za-z]{3} [ \d]\d \d\d:\d\d:\d\d \d{4}$/;

/**
 * A Retry-After header's wait in ms (RFC 9110 §10.2.3): delta-seconds, or an HTTP-date measured
 * against `now` (the injected clock's time); 0 for a date already past, undefined when absent or
 * not either form.
 */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  const text = value?.trim();
  if (text === undefined || text === '') return undefined;
  if (DELTA_SECONDS.test(text)) return Number(text) * 1000;
  // Date.parse reads the three forms RFC 9110 allows (IMF-fixdate, RFC 850, asctime), and more.
  const at = /[a-z]/i.test(text) ? Date.parse(ASCTIME.test(text) ? `${text} GMT` : text) : NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
