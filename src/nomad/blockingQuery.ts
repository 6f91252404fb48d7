/**
 * Nomad's blocking queries as one helper: ask with the last X-Nomad-Index, get an answer when
 * the result's index moves past it or when `wait` runs out (same index: nothing new). An index
 * that goes backwards (a restored or different cluster) restarts from 0.
 */
import { Observable, timer, type Subscription } from 'rxjs';
import type { Clock } from '../clock/index.js';
import { schedulerFor, systemClock } from '../clock/index.js';
import { retryDelay, type BackoffOptions } from './backoff.js';
import { isRetryable } from './errors.js';
import type { NomadResponse } from './transport.js';

/** The index to send next, given the one sent and the one Nomad answered with. */
export function nextQueryIndex(sent: number, answered: number): number {
  return answered < sent ? 0 : answered;
}

/** One query at `index` (0 = answer at once). The signal aborts it when the watcher stops. */
export type IndexedQuery<T> = (index: number, signal: AbortSignal) => Promise<NomadResponse<T>>;

export interface WatchQueryOptions {
  clock?: Clock;
  /** Index to start from (default 0: the first answer comes at once). */
  index?: number;
  backoff?: BackoffOptions;
  /** Which errors back off and retry (default: isRetryable, the Nomad transport's rule). */
  retryable?: (error: unknown) => boolean;
}

/**
 * An Observable of a query's successive results: the first answer, then one per index change.
 * Retryable errors back off on the clock (at least as long as an answer's Retry-After asks, up to
 * the back-off's maximum) and retry; others end the Observable with the error.
 * Unsubscribing aborts the query in flight.
 */
export function watchQuery<T>(query: IndexedQuery<T>, options: WatchQueryOptions = {}): Observable<NomadResponse<T>> {
  const scheduler = schedulerFor(options.clock ?? systemClock);
  const retryable = options.retryable ?? isRetryable;
  return new Observable<NomadResponse<T>>((subscriber) => {
    const controller = new AbortController();
    let index = options.index ?? 0;
    let lastEmitted: number | undefined;
    let failures = 0;
    let pause: Subscription | undefined;

    const ask = (): void => {
      const sent = index;
      query(sent, controller.signal).then(
        (response) => {
          if (controller.signal.aborted) return;
          failures = 0;
          // Never 0 after the first answer: a server without X-Nomad-Index would make a hot loop;
          // index 1 still answers at once on any live cluster.
          index = Math.max(1, nextQueryIndex(sent, response.meta.lastIndex));
          // Compared with what was last emitted, not with what was sent: after a reset the
          // immediate answer repeats the data just emitted.
          if (response.meta.lastIndex !== lastEmitted) {
            lastEmitted = response.meta.lastIndex;
            subscriber.next(response);
          }
          ask();
        },
        (error: unknown) => {
          if (controller.signal.aborted) return;
          if (!retryable(error)) return subscriber.error(error);
          failures++;
          pause = timer(retryDelay(failures, error, options.backoff), scheduler).subscribe(ask);
        },
      );
    };
    ask();
    return () => {
      controller.abort();
      pause?.unsubscribe();
    };
  });
}
