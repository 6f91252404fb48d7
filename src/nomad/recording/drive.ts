import { settle, systemClock, type VirtualClock } from '../../clock/index.js';

export interface DriveReplayOptions {
  /** Stop as soon as this is true (the replayed command finished). */
  done?: () => boolean;
  /**
   * Virtual milliseconds per real one (the recorded pace at 1); default: as fast as possible. The
   * same steps are taken either way, so the outcome does not depend on it.
   */
  speed?: number;
}

/**
 * Runs a replay's clock from timer to timer up to `endsAt` (epoch ms), letting every promise settle
 * between two timers: with a ReplayWire under the transports nothing else happens in between, so
 * the run is the same every time.
 */
export async function driveReplay(clock: VirtualClock, endsAt: number, options: DriveReplayOptions = {}): Promise<void> {
  const { done, speed } = options;
  const wallStart = systemClock.now();
  const virtualStart = clock.now();
  for (;;) {
    await settle(2);
    if (done?.()) return;
    const next = clock.nextDue();
    if (next === undefined || next > endsAt) break;
    if (speed !== undefined) {
      const wait = (next - virtualStart) / speed - (systemClock.now() - wallStart);
      if (wait > 0) await new Promise<void>((resolve) => systemClock.setTimeout(resolve, wait));
    }
    clock.advanceTo(next);
  }
  if (endsAt > clock.now()) clock.advanceTo(endsAt);
  await settle(2);
}
