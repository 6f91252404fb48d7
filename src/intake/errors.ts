/** Typed errors of the supervisor's API (undici style: a name, a stable code, the context that matters). */

export class SupervisorError extends Error {
  override name = 'SupervisorError';
  readonly code: string = 'WARDEN_SUPERVISOR';
}

/** A wait for something the supervisor does not watch (a job outside its scope). */
export class SupervisorScopeError extends SupervisorError {
  override name = 'SupervisorScopeError';
  override readonly code = 'WARDEN_OUT_OF_SCOPE';

  constructor(
    readonly namespace: string,
    readonly jobId: string,
  ) {
    super(`job ${namespace}/${jobId} is outside this supervisor's scope`);
  }
}

/** The allocation is not judged: Nomad does not watch it (batch, manual health...) and no opt-in policy covers it. */
export class AllocationNotJudgedError extends SupervisorError {
  override name = 'AllocationNotJudgedError';
  override readonly code = 'WARDEN_NOT_JUDGED';

  constructor(
    readonly allocId: string,
    readonly reason: string,
  ) {
    super(`allocation ${allocId} is not judged: ${reason}`);
  }
}

/** The supervisor was stopped before the awaited answer came. */
export class SupervisorStoppedError extends SupervisorError {
  override name = 'SupervisorStoppedError';
  override readonly code = 'WARDEN_SUPERVISOR_STOPPED';

  constructor(what: string) {
    super(`supervisor stopped while waiting for ${what}`);
  }
}
