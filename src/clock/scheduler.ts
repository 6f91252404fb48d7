import { Subscription, type SchedulerAction, type SchedulerLike } from 'rxjs';
import type { Clock, TimerHandle } from './clock.js';

/** One scheduled unit of RxJS work on a Clock; re-schedulable, as `interval` and `timer` need. */
class ClockAction<T> extends Subscription implements SchedulerAction<T> {
  private handle: TimerHandle | undefined;
  private state: T | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly work: (this: SchedulerAction<T>, state?: T) => void,
  ) {
    super(() => this.disarm());
  }

  schedule(state?: T, delay = 0): Subscription {
    if (this.closed) return this;
    this.state = state;
    this.disarm();
    this.handle = this.clock.setTimeout(() => this.run(), delay);
    return this;
  }

  private run(): void {
    this.handle = undefined;
    if (this.closed) return;
    try {
      this.work.call(this, this.state);
    } catch (error) {
      this.unsubscribe();
      throw error;
    }
  }

  private disarm(): void {
    if (this.handle !== undefined) {
      this.clock.clearTimeout(this.handle);
      this.handle = undefined;
    }
  }
}

/** An RxJS SchedulerLike whose time and timers are the given Clock's. */
export class ClockScheduler implements SchedulerLike {
  constructor(private readonly clock: Clock) {}

  now(): number {
    return this.clock.now();
  }

  schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, delay = 0, state?: T): Subscription {
    return new ClockAction(this.clock, work).schedule(state, delay);
  }
}

const schedulers = new WeakMap<Clock, ClockScheduler>();

/** The scheduler for `clock`, one per clock, to pass to timer, interval, delay and retry back-off. */
export function schedulerFor(clock: Clock): SchedulerLike {
  let scheduler = schedulers.get(clock);
  if (scheduler === undefined) {
    scheduler = new ClockScheduler(clock);
    schedulers.set(clock, scheduler);
  }
  return scheduler;
}
