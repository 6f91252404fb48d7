/** Typed errors of the runner pools (undici style: a name, a stable code, the context that matters). */
import type { EvaluationOutcome } from '../../machines/evaluationOutcome.js';
import type { StopReason, StopReasonKind } from '../../machines/runnerTypes.js';

export class RunnerPoolError extends Error {
  override name = 'RunnerPoolError';
  readonly code: string = 'WARDEN_RUNNER_POOL';
}

/** An environment spec that cannot become a template job (what is wrong, all of it). */
export class InvalidEnvironmentError extends RunnerPoolError {
  override name = 'InvalidEnvironmentError';
  override readonly code = 'WARDEN_INVALID_ENVIRONMENT';
}

export class UnknownEnvironmentError extends RunnerPoolError {
  override name = 'UnknownEnvironmentError';
  override readonly code = 'WARDEN_UNKNOWN_ENVIRONMENT';

  constructor(readonly environmentId: number) {
    super(`no execution environment ${environmentId}`);
  }
}

/** The environment has no idle runner right now (Poseidon's ErrNoRunnersAvailable). */
export class NoIdleRunnerError extends RunnerPoolError {
  override name = 'NoIdleRunnerError';
  override readonly code = 'WARDEN_NO_IDLE_RUNNER';

  constructor(
    readonly environmentId: number,
    /** Why the pool is empty, in Nomad's words, when something is wrong (runners that cannot be placed or started). */
    readonly reason?: string,
  ) {
    super(`no runners available for execution environment ${environmentId}${reason === undefined ? '' : `: ${reason}`}`);
  }
}

export class UnknownRunnerError extends RunnerPoolError {
  override name = 'UnknownRunnerError';
  override readonly code = 'WARDEN_UNKNOWN_RUNNER';

  constructor(readonly runnerId: string) {
    super(`no runner ${runnerId}`);
  }
}

/** An operation on a runner that is gone (destroyed, its allocation ended) or not claimed. */
export class RunnerUnavailableError extends RunnerPoolError {
  override name = 'RunnerUnavailableError';
  override readonly code = 'WARDEN_RUNNER_UNAVAILABLE';

  constructor(
    readonly runnerId: string,
    readonly reason: string,
  ) {
    super(`runner ${runnerId} ${reason}`);
  }
}

/**
 * An execution ended because its runner stopped under it: destroyed, retired, its allocation ended
 * or failed (`kind` says which, so an API can tell its client in its own words).
 */
export class RunnerStoppedError extends RunnerPoolError {
  override name = 'RunnerStoppedError';
  override readonly code = 'WARDEN_RUNNER_STOPPED';
  readonly kind: StopReasonKind;

  constructor(
    readonly runnerId: string,
    reason: StopReason,
  ) {
    super(`runner ${runnerId}: ${reason.message}`);
    this.kind = reason.kind;
  }
}

/** A job written but not placed: the evaluation's outcome in the Nomad CLI's words. */
export class PlacementFailedError extends RunnerPoolError {
  override name = 'PlacementFailedError';
  override readonly code = 'WARDEN_PLACEMENT_FAILED';

  constructor(
    readonly jobId: string,
    readonly outcome: EvaluationOutcome,
  ) {
    super(`job ${jobId}: ${outcome.message}`);
  }
}

/** A file operation the runner refused: not found or no permission (Poseidon's ErrFileNotFound), or a failed copy. */
export class RunnerFileError extends RunnerPoolError {
  override name = 'RunnerFileError';
  override readonly code: string = 'WARDEN_RUNNER_FILE';

  constructor(
    message: string,
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    super(message);
  }
}

export class RunnerFileNotFoundError extends RunnerFileError {
  override name = 'RunnerFileNotFoundError';
  override readonly code = 'WARDEN_RUNNER_FILE_NOT_FOUND';
}

export class PoolsStoppedError extends RunnerPoolError {
  override name = 'PoolsStoppedError';
  override readonly code = 'WARDEN_POOLS_STOPPED';

  constructor(what: string) {
    super(`the runner pools stopped before ${what}`);
  }
}

/** An unprivileged execution or file operation in an environment whose runners cannot run one (its unprivileged check failed). */
export class UnprivilegedUnavailableError extends RunnerPoolError {
  override name = 'UnprivilegedUnavailableError';
  override readonly code = 'WARDEN_UNPRIVILEGED_UNAVAILABLE';

  constructor(
    readonly environmentId: number,
    readonly reason: string,
  ) {
    super(`unprivileged executions cannot run in execution environment ${environmentId}: ${reason}`);
  }
}
