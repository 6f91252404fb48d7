/** The shapes the runner machine reads and reports (machines/runner.ts), shared with its environment and src/runners. */
import type { AnyActorRef } from 'xstate';
import type { ResolvedEnvironmentSpec } from '../src/runners/poseidonFormat.js';

/** A port of the runner reached from outside: `exposedPort` inside, `hostAddress` (`host:port`) outside. */
export interface MappedPort {
  exposedPort: number;
  hostAddress: string;
}

/** What the runner needs of its current allocation, as src/runners reads it from Nomad's updates. */
export interface RunnerAllocation {
  allocId: string;
  createIndex: number;
  modifyIndex: number;
  /** `ended`: client-terminal (complete, failed, lost) or told to stop. */
  status: 'pending' | 'running' | 'ended';
  /** Why it ended, in Nomad's words. */
  reason?: string;
  /** Still pending: what went wrong with its tasks so far (a driver failure, an exit before a restart). */
  trouble?: string;
  /** The runner's task was OOM-killed last (Nomad's Terminated event with `oom_killed`). */
  oomKilled?: boolean;
  ports: MappedPort[];
  /** Clock time the update was received. */
  at: number;
}

/** How a runner found on the cluster starts: as it was, or retired (its job no longer what the environment runs). */
export type RecoveredPhase = 'idle' | 'starting' | 'used' | 'stale';

/**
 * What runners ask of the world, given by src/runners: the machines say when, these functions do
 * it (Nomad writes; ending the runner's executions). A write resolves once Nomad took it.
 */
export interface RunnerIo {
  /** Writes the runner's job (create only) and follows its evaluation; rejects on a placement failure. */
  registerRunner(request: { runnerId: string; spec: ResolvedEnvironmentSpec; forcePull: boolean }): Promise<void>;
  /** Marks the runner used in its job's meta, with its inactivity timeout; nothing is written once `signal` aborted (the runner stopped first). */
  markUsed(request: { runnerId: string; timeoutMs: number; signal?: AbortSignal }): Promise<void>;
  /** Purges the runner's job (a job already gone is fine). */
  deregisterRunner(request: { runnerId: string }): Promise<void>;
  /** The runner is stopping: its executions end, with this reason. */
  endExecutions(runnerId: string, reason: StopReason): void;
}

export interface RunnerInput {
  /** Its job ID, `<environment>-<uuid>`. */
  runnerId: string;
  environmentId: number;
  /** The environment it was made from (its job copies the template of this spec). */
  spec: ResolvedEnvironmentSpec;
  io: RunnerIo;
  /** Which template version the runner's job was made from. */
  templateKey: string;
  /** Its image pulled again as it starts (a runner a PUT of its environment starts). */
  forcePull?: boolean;
  /** Found on the cluster (a restart) instead of registered now. */
  recovered?: {
    phase: RecoveredPhase;
    allocation: RunnerAllocation | undefined;
    /** A used runner's inactivity timeout, from its job's meta. */
    timeoutMs: number;
    /** The meta had no readable timeout: the used mark is written again with the fallback. */
    markAgain: boolean;
  };
}

/** The runner machine's input: the runner, and the environment actor it reports to. */
export interface RunnerMachineInput extends RunnerInput {
  environment: AnyActorRef;
}

/**
 * Where an environment's runners live (src/runners/runnerActors.ts): an actor each, not children
 * of the environment's actor, since XState copies a parent's children at every spawn and stop (a
 * claim would cost more the larger the pool).
 */
export interface RunnerActors {
  /** Creates and starts the runner's actor, reporting to `environment`. */
  start(input: RunnerInput, environment: AnyActorRef): void;
  /** The runner's actor while it runs. */
  get(runnerId: string): AnyActorRef | undefined;
}

export type StopReasonKind = 'inactivity' | 'destroyed' | 'retired' | 'allocation-ended' | 'allocation-failed' | 'placement-failed' | 'oom-killed';

export interface StopReason {
  kind: StopReasonKind;
  message: string;
  /** It never ran (placement or allocation failure): counts toward the environment's back-off. */
  failure: boolean;
}

export interface RunnerExecution {
  id: string;
  /** `execute`, or the file operation (`files.write`, `files.list`, `files.read`). */
  kind: string;
  startedAt: number;
}

export interface RunnerContext {
  runnerId: string;
  /** The environment's actor: what the runner reports to. */
  environment: AnyActorRef;
  environmentId: number;
  spec: ResolvedEnvironmentSpec;
  io: RunnerIo;
  templateKey: string;
  forcePull: boolean;
  recovered: RecoveredPhase | undefined;
  allocation: RunnerAllocation | undefined;
  /** When its allocation was first seen pending (Poseidon measures startup from there). */
  pendingSince: number | undefined;
  /** Time from pending to running. */
  startupMs: number | undefined;
  /** Inactivity timeout of the claim; 0: none. */
  timeoutMs: number;
  claimedAt: number | undefined;
  lastActivity: number | undefined;
  /** Executions and file operations running now. */
  executions: RunnerExecution[];
  retireRequested: boolean;
  markAttempts: number;
  stopAttempts: number;
  lastError: string | undefined;
  stopReason: StopReason | undefined;
  /** A recovered used runner whose mark needs no rewrite. */
  markedOnRecovery: boolean;
}

export type RunnerEvent =
  | { type: 'ALLOCATION.UPDATED'; allocation: RunnerAllocation }
  | { type: 'CLAIM'; timeoutMs: number; at: number }
  /** A file operation (or anything else that counts as use): the inactivity timer starts again. */
  | { type: 'ACTIVITY'; at: number }
  | { type: 'EXECUTION.STARTED'; executionId: string; kind: string; at: number }
  | { type: 'EXECUTION.ENDED'; executionId: string }
  /** The user's destroy. */
  | { type: 'DESTROY'; reason: string }
  /** The environment's: deleted, template changed, too many idle runners. */
  | { type: 'RETIRE'; reason: string };

/** What a runner tells its environment. */
export type RunnerReport =
  | { type: 'RUNNER.IDLE'; runnerId: string; startupMs: number }
  | { type: 'RUNNER.STARTING'; runnerId: string }
  /** `failed`: it never ran (placement or allocation failure), `reason` says why. */
  | { type: 'RUNNER.STOPPING'; runnerId: string; failed: boolean; reason: string }
  /** Its job is purged: the runner is done. */
  | { type: 'RUNNER.DESTROYED'; runnerId: string };

export interface RunnerOutput {
  runnerId: string;
  reason: StopReason;
}
