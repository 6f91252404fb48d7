
export type { AllocationRef, StateChange, VerdictOutcome, VerdictRecord } from '../intake/types.js';

export type ConnectionState = 'connecting' | 'streaming' | 'resyncing' | 'backingOff' | 'stopped';

/** Something the supervisor could not use, reported and skipped: it keeps running. */
export interface SupervisorProblem {
  /**
   * `stream-failed`: the event stream gave up for good (a refused token, a bad topic).
   * `stream-refused`: Nomad keeps closing the event stream before its first byte, Nomad 2.x's way of
   * refusing a subscription (most likely the token); reported once per run of such closes, retried.
   * `consul-unavailable`: a Consul health query failed; it is retried with back-off, and allocations
   * judged by their checks wait meanwhile.
   * `nomad-version`: the cluster's Nomad release could not be read, or is one Warden does not know:
   * its allocations are judged by today's rules.
   * `nomad-disagrees`: Warden's verdict of an allocation, judged from its history, is not the
   * decision Nomad's client recorded for it (its DeploymentStatus); Warden's verdict stands.
   */
  kind: 'job-unavailable' | 'bad-payload' | 'bad-allocation' | 'stream-failed' | 'stream-refused' | 'consul-unavailable' | 'nomad-version' | 'nomad-disagrees';
  message: string;
  allocId?: string;
  /** Raft index of the offending batch, when known. */
  index?: number;
}
