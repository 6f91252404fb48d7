/** Exponential back-off with jitter, as a pure function of the attempt number. */

export interface BackoffOptions {
  /** Delay ceiling of the first retry, ms (default 500). */
  initialMs?: number;
  /** Ceiling of any delay, ms (default 30 s). */
  maxMs?: number;
  /** Growth per attempt (default 2). */
  factor?: number;
  /** Source of jitter in [0, 1); inject a seeded one for deterministic tests (default Math.random). */
  random?: () => number;
}

/**
 * Delay before retry number `attempt` (1 = first retry): "equal jitter", half of the exponential
 * ceiling fixed plus up to half at random, so retries spread out yet never collapse to zero.
 */
export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  const { initialMs = 500, maxMs = 30_000, factor = 2, random = Math.random } = options;
  const ceiling = Math.min(maxMs, initialMs * factor ** Math.max(0, attempt - 1));
  return ceiling / 2 + (ceiling / 2) * Math.min(Math.max(random(), 0), 1);
}
