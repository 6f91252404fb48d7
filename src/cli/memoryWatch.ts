import type { Clock, TimerHandle } from '../clock/clock.js';
import type { LogSink } from '../logger.js';

/**
 * Poseidon's memory watchdog (profiling.memoryinterval and memorythreshold; watchMemoryAndAlert in
 * its cmd/poseidon/main.go), for `warden serve`: every interval the heap in use is read, and a
 * warning logged when it reaches the threshold (in MB of 10^6 bytes, as Poseidon counts), once, until
 * it is below again, which is logged too. Poseidon dumps Go's heap and goroutine profiles with the
 * warning; Node has no such text dump, so the warning carries the heap's figures.
 */
export interface MemoryWatchOptions {
  clock: Clock;
  intervalMs: number;
  thresholdMb: number;
  logger: LogSink;
  /** The heap in use, bytes (default: process.memoryUsage()'s heapUsed). */
  heapUsed?: () => number;
}

/** Starts the watch; the function it returns stops it. */
export function watchMemory(options: MemoryWatchOptions): () => void {
  const { clock, intervalMs, logger } = options;
  const heapUsed = options.heapUsed ?? (() => process.memoryUsage().heapUsed);
  const threshold = options.thresholdMb * 1_000_000;
  let exceeded = false;
  let timer: TimerHandle | undefined;
  const check = (): void => {
    const heap = heapUsed();
    if (!exceeded && heap >= threshold) {
      exceeded = true;
      logger.warn({ heap, thresholdMb: options.thresholdMb }, 'Memory Threshold exceeded');
    } else if (exceeded && heap < threshold) {
      exceeded = false;
      logger.info({ heap, thresholdMb: options.thresholdMb }, 'Memory Threshold no longer exceeded');
    }
    timer = clock.setTimeout(check, intervalMs);
  };
  check();
  return () => {
    if (timer !== undefined) clock.clearTimeout(timer);
    timer = undefined;
  };
}
