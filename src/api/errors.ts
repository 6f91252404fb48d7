/**
 * Poseidon's error answers (internal/api/helpers.go, pkg/dto): a client error is `{"message"}`
 * with its status, a server error `{"message", "errorCode"}` with 500 (or 503 from /health), and
 * some answers carry no body at all (401, an unknown environment's 404, an unknown route). Every
 * failure of a handler becomes one of these: never a stack trace, never a secret.
 */
import { NomadConnectionError, NomadError, NomadHttpError, NomadTimeoutError } from '../nomad/errors.js';
import {
  InvalidEnvironmentError, NoIdleRunnerError, PlacementFailedError, PoolsStoppedError, RunnerFileNotFoundError, RunnerUnavailableError,
  UnknownEnvironmentError, UnknownRunnerError,
} from '../runners/errors.js';
import { errorMessage } from '../errorMessage.js';
import { scrubSecrets } from '../secrets.js';

/** Poseidon's machine-readable causes of a 500 (swagger InternalServerError.errorCode). */
export type ErrorCode = 'NOMAD_UNREACHABLE' | 'NOMAD_OVERLOAD' | 'NOMAD_INTERNAL_SERVER_ERROR' | 'PREWARMING_POOL_DEPLETING' | 'UNKNOWN';

/** Poseidon's wording, which its clients may show or match. */
export const MESSAGES = {
  unknownEnvironment: 'execution environment not found',
  noRunners: 'no runners available for this execution environment',
  unknownRunner: 'no runner found with this id',
  unknownExecution: 'execution id unknown',
  forbiddenCharacter: 'use of forbidden character',
  fileNotFound: 'file not found or insufficient permissions',
} as const;

/** An answer other than success, as Poseidon gives it. */
export class ApiError extends Error {
  override name = 'ApiError';

  constructor(
    readonly status: number,
    message: string,
    /** Sent as `errorCode` (server errors). */
    readonly errorCode?: ErrorCode,
    /** No body at all, as Poseidon answers 401, 404 of an environment, unknown routes. */
    readonly empty = false,
  ) {
    super(scrubSecrets(message));
  }

  /** The JSON body, or undefined for an empty answer. */
  body(): { message: string; errorCode?: ErrorCode } | undefined {
    if (this.empty) return undefined;
    return this.errorCode === undefined ? { message: this.message } : { message: this.message, errorCode: this.errorCode };
  }
}

export const badRequest = (message: string): ApiError => new ApiError(400, message);
/** 404 without a body (an unknown route or environment) or with one. */
export const notFound = (message?: string): ApiError => new ApiError(404, message ?? 'not found', undefined, message === undefined);
export const unauthorized = (): ApiError => new ApiError(401, 'unauthorized', undefined, true);
export const methodNotAllowed = (): ApiError => new ApiError(405, 'method not allowed', undefined, true);
export const runnerGone = (message: string = MESSAGES.unknownRunner): ApiError => new ApiError(410, message);
export const internalError = (message: string, errorCode: ErrorCode = 'UNKNOWN'): ApiError => new ApiError(500, message, errorCode);
/** The runner pools are not read from Nomad yet: Nomad does not answer (retried meanwhile). */
export const notRecovered = (reason: string): ApiError => new ApiError(503, `the runner pools are not recovered from Nomad yet: ${reason}`, 'NOMAD_UNREACHABLE');

/** Why Nomad failed us, in Poseidon's codes. */
function nomadCode(error: NomadError): ErrorCode {
  if (error instanceof NomadConnectionError || error instanceof NomadTimeoutError) return 'NOMAD_UNREACHABLE';
  if (error instanceof NomadHttpError && error.status >= 500) return 'NOMAD_INTERNAL_SERVER_ERROR';
  return 'UNKNOWN';
}

/** Any failure of a handler as the answer Poseidon gives for it. */
export function apiErrorOf(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof InvalidEnvironmentError) return badRequest(error.message);
  if (error instanceof UnknownEnvironmentError) return notFound(MESSAGES.unknownEnvironment);
  // Poseidon's words first (clients may match them), then Nomad's reason when there is one.
  if (error instanceof NoIdleRunnerError) return internalError(error.reason === undefined ? MESSAGES.noRunners : `${MESSAGES.noRunners}: ${error.reason}`, 'NOMAD_OVERLOAD');
  if (error instanceof UnknownRunnerError || error instanceof RunnerUnavailableError) return runnerGone();
  if (error instanceof RunnerFileNotFoundError) return new ApiError(424, MESSAGES.fileNotFound);
  // The cluster has no room: the same answer as an empty pool.
  if (error instanceof PlacementFailedError) return internalError(error.message, 'NOMAD_OVERLOAD');
  if (error instanceof PoolsStoppedError) return new ApiError(503, 'the server is shutting down', 'UNKNOWN');
  if (error instanceof NomadError) return internalError(error.message, nomadCode(error));
  return internalError(errorMessage(error));
}
