/** Typed errors of the health layer (undici style: a name, a code, and the context that matters). */

export class HealthError extends Error {
  override name = 'HealthError';
  readonly code: string = 'WARDEN_HEALTH';
}

/** The caller handed the registry a malformed policy, view or check list. */
export class HealthInputError extends HealthError {
  override name = 'HealthInputError';
  override readonly code = 'WARDEN_HEALTH_INPUT';

  constructor(
    readonly allocationId: string,
    readonly problem: string,
  ) {
    super(`allocation ${allocationId}: ${problem}`);
  }
}

/** A job's health settings (or a user's opt-in policy) hold a value the health rules cannot use. */
export class HealthPolicyError extends HealthError {
  override name = 'HealthPolicyError';
  override readonly code = 'WARDEN_HEALTH_POLICY';

  constructor(
    readonly subject: string,
    readonly problem: string,
  ) {
    super(`${subject}: ${problem}`);
  }
}
