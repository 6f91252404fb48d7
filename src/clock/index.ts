export type { Clock, TimerHandle } from './clock.js';
export { SystemClock, systemClock } from './systemClock.js';
export { VirtualClock, VirtualClockRunawayError, type VirtualClockOptions } from './virtualClock.js';
export { ClockScheduler, schedulerFor } from './scheduler.js';
export { settle } from './settle.js';
