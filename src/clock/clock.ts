/**
 * The one source of time in Warden. Every actor (`createActor(m, { clock })`) and every RxJS time
 * operator (through `schedulerFor(clock)`) is handed a Clock, so the whole system can run on a
 * VirtualClock in tests and replays.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch, on this clock. */
  now(): number;
  setTimeout(callback: () => void, delayMs: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** Opaque to callers: a SystemClock hands out Node timers, a VirtualClock numbers. */
export type TimerHandle = unknown;
