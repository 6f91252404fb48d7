/** Exec sessions: run commands in allocations over Nomad's exec websocket (see execClient, runCommand). */
export { ExecClient, type ExecClientOptions } from './execClient.js';
export type { ExecOptions, ExecSession, ExecSessionActor, ExecTarget } from './sessions.js';
export { runCommand, type RunCommandOptions } from './runCommand.js';
export { DEFAULT_SETUSER, type ExecutionOptions } from './executionOptions.js';
export { ShellQuoteError, shellJoin, shellQuote } from './shellQuote.js';
export {
  ExecAbortedError,
  ExecAllocationNotFoundError,
  ExecCommandStartError,
  ExecConnectionLostError,
  ExecError,
  ExecPermissionDeniedError,
  ExecProtocolError,
  ExecTaskNotFoundError,
  ExecTimeoutError,
} from '../nomad/exec/errors.js';
