import type { Allocation, Deployment, Evaluation, Job } from '../nomad/types.js';
import type { ConnectionState } from './types.js';

/**
 * What the supervisor consumes: cluster objects as the event stream (or a reconciling list)
 * delivers them, and the stream's connection state. The source that turns Nomad's event stream
 * into these lives in nomadSource.ts; tests and embedders may feed their own.
 */
export type SupervisorInput =
  /** `resync`: from the listing after a (re)connect, not live from the stream. */
  | { kind: 'allocation'; allocation: Allocation; index: number; resync?: true }
  | { kind: 'evaluation'; evaluation: Evaluation; index: number }
  | { kind: 'deployment'; deployment: Deployment; index: number }
  /** `deleted`: the job was purged (isJobPurge: Nomad 1.8+ publishes the purge). */
  | { kind: 'job'; job: Job; index: number; deleted?: boolean }
  | { kind: 'connection'; state: Exclude<ConnectionState, 'stopped'>; attempt?: number; retryInMs?: number; reason?: string; index?: number }
  /** An event that could not be used (wrong shape): reported with its index and skipped; or the stream gave up. */
  | { kind: 'problem'; problem: 'bad-payload' | 'stream-failed' | 'stream-refused'; message: string; index?: number };

/**
 * What a source emits: one input, or the inputs of one event stream batch at once, taken in order
 * (one emission per batch instead of one per event through the source's operators).
 */
export type SupervisorInputs = SupervisorInput | readonly SupervisorInput[];

/** The inputs of one emission, in order. */
export function eachInput(inputs: SupervisorInputs): readonly SupervisorInput[] {
  return Array.isArray(inputs) ? (inputs as readonly SupervisorInput[]) : [inputs as SupervisorInput];
}
