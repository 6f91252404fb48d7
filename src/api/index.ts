/** Poseidon's public runner API (REST + WebSocket) over Warden's runner pools (see api.ts). */
export { API_BASE_PATH, PoseidonApi, type PoseidonApiOptions } from './api.js';
export { startApiServer, type ApiServer, type ApiServerOptions } from './server.js';
export { ApiMetrics, type ClaimOutcome } from './metrics.js';
export { ApiError, MESSAGES, type ErrorCode } from './errors.js';
export { TOKEN_HEADER } from './auth.js';
export type { EnvironmentDefaults } from './context.js';
export type { ExecutionEnvironment } from './environments.js';
export type { ServerMessage, SocketOutcome } from './executionSocket.js';
