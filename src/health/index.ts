export { HealthRegistry, type HealthChange, type HealthHistory, type HealthListener, type HealthRegistryOptions, type HealthStart, type HealthStatus, type CheckUpdateOptions, type MachineEntry, type MachineTable, CHECK_LOOKUP_INTERVAL_MS } from './registry.js';
export type { AllocationHealthSnapshot } from './machineStepper.js';
export type { AllocationActorRef, InspectionObserver } from './inspection.js';
export { allocationView, type AllocationViewResult, type ObservedAllocationView } from './allocationView.js';
export { allocationHistory, viewAt, TASK_EVENTS_KEPT, type AllocationHistory, type HistoryBase, type HistoryOptions, type TimedView, type Undetermined } from './allocationHistory.js';
export { judgeSight, openingHistory, followingHistory, type Opening, type OpeningResult, type Sight } from './historyFeed.js';
export { ClockHorizon, NOT_WAITING, WaitingQueue, type Horizon, type HorizonWaiter } from './horizon.js';
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
  HealthUndetermined,
  HealthVerdict,
  TaskView,
} from '../../machines/allocationHealthTypes.js';
export type { AllocationHealthState } from '../../machines/allocationHealth.js';
