import { scrubSecrets } from '../../secrets.js';

/**
 * Why an exec session ended without an `exited` frame. Nomad reports errors only as a close frame
 * (1008 for 4xx causes, 1011 for 500) after the upgrade, or, before v2.0.3, as a plain HTTP error
 * instead of the upgrade; both carry Nomad's own reason, kept in `reason`.
 */
export class ExecError extends Error {
  readonly code: string = 'WARDEN_EXEC';
  /** Nomad's reason text, as sent. */
  readonly reason: string;
  /** The websocket close code, or undefined when the upgrade itself was refused. */
  readonly closeCode: number | undefined;
  /** The HTTP status when the upgrade was refused. */
  readonly status: number | undefined;

  constructor(message: string, details: { reason?: string; closeCode?: number; status?: number } = {}) {
    // Nomad's reason is the server's text: scrubbed of every registered secret (src/secrets.ts).
    super(scrubSecrets(message));
    this.name = new.target.name;
    this.reason = scrubSecrets(details.reason ?? '');
    this.closeCode = details.closeCode;
    this.status = details.status;
  }
}

export class ExecAllocationNotFoundError extends ExecError {
  override readonly code = 'WARDEN_EXEC_ALLOCATION_NOT_FOUND';
}

export class ExecTaskNotFoundError extends ExecError {
  override readonly code = 'WARDEN_EXEC_TASK_NOT_FOUND';
}

export class ExecCommandStartError extends ExecError {
  override readonly code = 'WARDEN_EXEC_COMMAND_START';
}

export class ExecPermissionDeniedError extends ExecError {
  override readonly code = 'WARDEN_EXEC_PERMISSION_DENIED';
}

/** The connection ended (1006, or a close frame that is not an error) before the `exited` frame. */
export class ExecConnectionLostError extends ExecError {
  override readonly code = 'WARDEN_EXEC_CONNECTION_LOST';
}

/** Nomad sent something that is not a frame of the protocol. */
export class ExecProtocolError extends ExecError {
  override readonly code = 'WARDEN_EXEC_PROTOCOL';
}

/** The caller's AbortSignal ended the session. */
export class ExecAbortedError extends ExecError {
  override readonly code = 'WARDEN_EXEC_ABORTED';
}

export class ExecTimeoutError extends ExecError {
  override readonly code = 'WARDEN_EXEC_TIMEOUT';
}

type ErrorClass = new (message: string, details: { reason?: string; closeCode?: number; status?: number }) => ExecError;

// Nomad's reason texts (nomad-protocol §3.5, client/alloc_endpoint.go, nomad/structs/errors.go).
const CAUSES: readonly [RegExp, ErrorClass, string][] = [
  [/unknown allocation|alloc(ation)? not found/i, ExecAllocationNotFoundError, 'allocation not found'],
  [/task not found|unknown task name|task ".*" (not started yet|is not running)/i, ExecTaskNotFoundError, 'task not found or not running'],
  [/failed to start command|command is not present|failed to marshal command|executable file not found/i, ExecCommandStartError, 'command could not start'],
  // After the command patterns: a command that cannot start may also say "permission denied".
  [/permission denied|acl token (not found|expired)/i, ExecPermissionDeniedError, 'permission denied'],
];

function fromReason(
  reason: string,
  details: { closeCode?: number; status?: number },
  fallback: [ErrorClass, string],
): ExecError {
  const cause = CAUSES.find(([pattern]) => pattern.test(reason));
  const [ErrorType, summary] = cause === undefined ? fallback : [cause[1], cause[2]];
  const suffix = reason === '' ? '' : `: ${reason}`;
  return new ErrorType(`exec ${summary}${suffix}`, { reason, ...details });
}

/** The error for a websocket close that came before the `exited` frame. */
export function errorFromClose(closeCode: number, reason: string): ExecError {
  if (closeCode === 1008 || closeCode === 1011) {
    const fallback: [ErrorClass, string] =
      closeCode === 1011 ? [ExecCommandStartError, 'command could not start'] : [ExecError, 'refused by Nomad'];
    return fromReason(reason, { closeCode }, fallback);
  }
  const how = closeCode === 1006 ? 'connection dropped' : `connection closed with ${closeCode}`;
  return new ExecConnectionLostError(`exec ${how} before the command exited${reason === '' ? '' : `: ${reason}`}`, {
    reason,
    closeCode,
  });
}

/** The error for an upgrade Nomad answered with a plain HTTP status (Nomad before v2.0.3). */
export function errorFromHttpStatus(status: number, body: string): ExecError {
  const reason = body.trim();
  const fallback: [ErrorClass, string] =
    status === 403 ? [ExecPermissionDeniedError, 'permission denied'] : status === 404 ? [ExecAllocationNotFoundError, 'allocation not found'] : [ExecError, `refused with HTTP ${status}`];
  return fromReason(reason, { status }, fallback);
}
