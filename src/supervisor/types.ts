import type { AllocationHealthState } from '../../machines/allocationHealth.js';
import type { HealthOutcome } from '../../machines/allocationHealthTypes.js';

/** Which allocation a change or verdict is about. */
export interface AllocationRef {
  allocId: string;
  /** "<job>.<group>[<index>]" */
  name: string | undefined;
  namespace: string;
  jobId: string;
  taskGroup: string;
  /** The deployment that placed it, if any. */
  deploymentId: string | undefined;
}

/** An allocation's health machine moved from one state to another. */
export interface StateChange {
  alloc: AllocationRef;
  from: AllocationHealthState;
  to: AllocationHealthState;
  /** Clock time of the step. */
  at: number;
}

/** An allocation's final outcome: a verdict (healthy or not, with reasons) or stopped. */
export interface VerdictRecord {
  alloc: AllocationRef;
  outcome: HealthOutcome;
}

export type ConnectionState = 'connecting' | 'streaming' | 'resyncing' | 'backingOff' | 'stopped';

/** Something the supervisor could not use, reported and skipped: it keeps running. */
export interface SupervisorProblem {
  /**
   * `stream-failed`: the event stream gave up for good (a refused token, a bad topic).
   * `stream-refused`: Nomad keeps closing the event stream before its first byte, Nomad 2.x's way of
   * refusing a subscription (most likely the token); reported once per run of such closes, retried.
   * `consul-unavailable`: a Consul health query failed; it is retried with back-off, and allocations
   * judged by their checks wait meanwhile.
   */
  kind: 'job-unavailable' | 'bad-payload' | 'bad-allocation' | 'stream-failed' | 'stream-refused' | 'consul-unavailable';
  message: string;
  allocId?: string;
  /** Raft index of the offending batch, when known. */
  index?: number;
}
