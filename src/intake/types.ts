/** What the intake tells about allocations: which one, how its health moved, how it ended. */
import type { AllocationHealthState } from '../../machines/allocationHealth.js';
import type { HealthOutcome, HealthUndetermined } from '../../machines/allocationHealthTypes.js';
import type { NomadRecordedVerdict } from '../health/nomadDecision.js';

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
  /** When it moved, on the data's clock (the allocation's own event times). */
  at: number;
}

/**
 * How an allocation ended: a verdict (healthy or not, with reasons), stopped, or, where its history
 * as Nomad keeps it cannot tell, Nomad's own recorded verdict (`basis: 'nomad'`) or undetermined.
 */
export type VerdictOutcome = HealthOutcome | NomadRecordedVerdict | HealthUndetermined;

export interface VerdictRecord {
  alloc: AllocationRef;
  outcome: VerdictOutcome;
}

