import type { Clock, TimerHandle } from './clock.js';

/** Real time. The only module in Warden that reads the wall clock or arms a real timer. */
export class SystemClock implements Clock {
  now(): number {
    return Date.now();
  }

  setTimeout(callback: () => void, delayMs: number): TimerHandle {
    return globalThis.setTimeout(callback, Math.max(0, delayMs));
  }

  clearTimeout(handle: TimerHandle): void {
    globalThis.clearTimeout(handle as ReturnType<typeof globalThis.setTimeout>);
  }
}

export const systemClock: Clock = new SystemClock();
