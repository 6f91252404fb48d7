/** Warden's Nomad transport: the HTTP client, blocking queries, the resumable event stream, the API types. */
export * from './types.js';
export { UnixNanos } from './unixNanos.js';
export { type NomadConfig, type NomadTlsOptions, NomadConfigError, nomadConfigFromEnv, DEFAULT_NOMAD_ADDRESS } from './config.js';
export { type NomadConnectOptions, type NomadEndpoint, nomadEndpoint, tlsConnectOptions, nomadAuthHeaders } from './connection.js';
export {
  NomadError,
  NomadHttpError,
  NomadDecodeError,
  NomadTimeoutError,
  NomadConnectionError,
  NomadStreamError,
  isRetryable,
} from './errors.js';
export { parseNomadJson, stringifyNomadJson } from './json.js';
export { type NomadResponse, type NomadStreamResponse, type NomadTransportOptions, type RequestOptions, NomadTransport } from './transport.js';
export { type NomadWire, type WireLayer, type WireRequest, type WireResponse, UndiciWire } from './wire.js';
export * from './recording/index.js';
export { type QueryOptions, type RegisterJobOptions, type ScaleJobOptions, type ParseJobOptions, type JobVersions, NomadClient } from './client.js';
export { type IndexedQuery, type WatchQueryOptions, nextQueryIndex, watchQuery } from './blockingQuery.js';
export { type BackoffOptions, type RetryAfterHint, backoffDelay, parseRetryAfter, retryDelay } from './backoff.js';
export {
  type BatchSkips,
  type DecodedFrame,
  type SkippedEvent,
  SKIPPED_EXAMPLES,
  decodeFrame,
  undecodableBatch,
  isAllocationEvent,
  isJobEvent,
  isEvaluationEvent,
  isDeploymentEvent,
} from './eventFrames.js';
export {
  type EventBatch,
  type EventStreamOptions,
  type NomadEventStream,
  type StreamState,
  type StreamStatus,
  EMPTY_CLOSES_SUSPECTED_REFUSAL,
  nomadEventStream,
} from './eventStream.js';
