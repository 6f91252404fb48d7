/**
 * Bounded waits on a condition that changes only when something arrives (a stream's update, a line
 * written): checked at once and at every `notify()`, never polled, never a fixed sleep.
 */
export class Conditions {
  private readonly pending = new Map<() => void, (error: Error) => void>();

  /** Something arrived: every pending condition is checked again. */
  notify(): void {
    for (const check of [...this.pending.keys()]) check();
  }

  /** Fails every pending wait with `error` (what they waited on is gone). */
  abandon(error: Error): void {
    for (const fail of [...this.pending.values()]) fail(error);
  }

  /** Resolves with `value()` once it is defined; undefined after `timeoutMs` (or rejects when abandoned). */
  until<T>(value: () => T | undefined, timeoutMs: number): Promise<T | undefined> {
    const now = value();
    if (now !== undefined) return Promise.resolve(now);
    return new Promise<T | undefined>((resolve, reject) => {
      const settle = (): void => {
        this.pending.delete(check);
        clearTimeout(timer);
      };
      const check = (): void => {
        const found = value();
        if (found === undefined) return;
        settle();
        resolve(found);
      };
      const timer = setTimeout(() => {
        settle();
        resolve(undefined);
      }, timeoutMs);
      this.pending.set(check, (error) => {
        settle();
        reject(error);
      });
    });
  }
}
