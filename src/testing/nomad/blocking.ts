/**
 * Blocking queries (command/agent/http.go parseWait, nomad/rpc.go blockingRPC): with `?index=N` the
 * answer waits until the endpoint's index exceeds N or `wait` (default and maximum 5 min) plus up
 * to wait/16 of seeded jitter has passed on the fake's clock; then the current data is returned.
 */
import type { Clock } from '../../clock/index.js';
import { NomadApiError } from './errors.js';
import { parseGoDuration } from './goText.js';
import type { SeededRandom } from './ids.js';

const MAX_WAIT_MS = 300_000;
const JITTER_FRACTION = 16;

export interface BlockingOptions {
  readonly index: number;
  readonly waitMs: number;
}

export function parseBlocking(query: URLSearchParams): BlockingOptions {
  const indexText = query.get('index');
  const waitText = query.get('wait');
  let index = 0;
  if (indexText !== null && indexText !== '') {
    if (!/^\d+$/.test(indexText)) throw new NomadApiError(400, 'Invalid index');
    index = Number(indexText);
  }
  let waitMs = MAX_WAIT_MS;
  if (waitText !== null && waitText !== '') {
    const ns = parseGoDuration(waitText);
    if (ns === undefined || !/[a-zµμ]$/.test(waitText)) throw new NomadApiError(400, 'Invalid wait time');
    waitMs = Math.min(MAX_WAIT_MS, ns / 1e6);
  }
  return { index, waitMs };
}

export interface BlockingContext {
  readonly clock: Clock;
  readonly random: SeededRandom;
  /** Subscribes to state changes; returns the unsubscribe function. */
  onChange(listener: () => void): () => void;
}

/**
 * Resolves when `currentIndex()` exceeds `options.index`, on timeout, or when `aborted` fires
 * (the client went away). Resolves at once for a non-blocking query.
 */
export function waitForIndex(
  context: BlockingContext,
  options: BlockingOptions,
  currentIndex: () => number,
  onAbort: (abort: () => void) => void,
): Promise<void> {
  if (options.index === 0 || currentIndex() > options.index) return Promise.resolve();
  const timeout = options.waitMs + context.random.next() * (options.waitMs / JITTER_FRACTION);
  return new Promise((resolve) => {
    const finish = (): void => {
      context.clock.clearTimeout(timer);
      unsubscribe();
      resolve();
    };
    const timer = context.clock.setTimeout(finish, timeout);
    const unsubscribe = context.onChange(() => {
      if (currentIndex() > options.index) finish();
    });
    onAbort(finish);
  });
}
