export { HealthRegistry, type HealthChange, type HealthListener, type HealthRegistryOptions, type HealthStatus } from './registry.js';
export type { AllocationHealthSnapshot } from './machineStepper.js';
export type { AllocationActorRef, InspectionObserver } from './inspection.js';
export { allocationView, type AllocationViewResult, type ObservedAllocationView } from './allocationView.js';
export {
  healthPolicyFor,
  expectedChecks,
  type HealthPolicyContext,
  type HealthPolicyDecision,
  type OptInHealthPolicy,
} from './policy.js';
export { parseNomadTime, parseNanoTime, durationMs, type ParsedTime } from './nomadTime.js';
export { HealthError, HealthInputError, HealthPolicyError } from './errors.js';
export type {
  AllocationView,
  CheckView,
  HealthOutcome,
  HealthPolicy,
  HealthStopped,
  HealthVerdict,
  TaskView,
} from '../../machines/allocationHealthTypes.js';
export type { AllocationHealthState } from '../../machines/allocationHealth.js';
