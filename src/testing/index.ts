/**
 * Warden's testing kit: the simulated clock, a loopback FakeNomad that recordings cannot tell from
 * Nomad 1.1.2, and the reader of recorded Nomad traffic.
 */
export { VirtualClock, settle } from '../clock/index.js';
export { FakeNomad, type FakeNomadOptions, type FakeNomadTlsOptions, type FakeNomadVersion } from './fakeNomad.js';
export { FakeConsul, type FakeCheckInput, type FakeCheckStatus, type FakeConsulOptions, type FakeServiceInput, type FakeServiceRegistration } from './fakeConsul.js';
export type { FakeExec, FakeExecTarget } from './fakeExec/attachFakeExec.js';
export { ClusterState, type PlaceOptions, type ScheduleOptions, type RegisterOptions, type RegisterResult, type TaskEventInput, type TaskUpdate } from './nomad/clusterState.js';
export type { EventBatch, StreamEvent } from './nomad/eventBroker.js';
export { ActingCluster, type ActingClusterOptions, type AllocationFailure, type FailureMatch, type PlacementFailure } from './nomad/actingCluster.js';
export { NomadApiError } from './nomad/errors.js';
export { FakeNomadChecks, type FakeCheckIdentity, type FakeCheckOutcome } from './nomad/checks.js';
export { FaultSwitches, STREAM_CLOSED_TEXT, type RequestFailure, type StreamFaultPlan } from './nomad/faults.js';
export { JobSpecError } from './nomad/jobSpec.js';
export { ReplayLineError, type ReplayHandle, type ReplayOptions, type ReplayTransform } from './nomad/replay.js';
export { parseLossless, stringifyLossless, type LosslessJson } from './losslessJson.js';
export * from './recording.js';
export { QuietDriver, ServerActivity, WireTally, type QuietDriverOptions, type QuietPair, type QuietProbe } from './quiet.js';
