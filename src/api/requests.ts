/**
 * Request bodies of Poseidon's API (pkg/dto), decoded as Go's encoding/json decodes them into
 * Poseidon's structs: unknown fields ignored, `null` the same as absent, a value of the wrong type
 * or out of its Go type's range refused (400). Where the published schema requires a field that
 * Poseidon would silently zero (a runner's environment, an execution's command), it is required.
 */
import { badRequest, MESSAGES } from './errors.js';

type JsonObject = Readonly<Record<string, unknown>>;

export interface RunnerRequest {
  executionEnvironmentId: number;
  /** Seconds; 0: none. */
  inactivityTimeout: number;
}

export interface EnvironmentRequest {
  prewarmingPoolSize: number;
  cpuLimit: number;
  memoryLimit: number;
  image: string;
  networkAccess: boolean;
  exposedPorts: number[];
}

export interface ExecutionRequest {
  command: string;
  privilegedExecution: boolean;
  /** Seconds; 0: none. */
  timeLimit: number;
  environment: Readonly<Record<string, string>>;
}

export interface FileToCopy {
  path: string;
  content: Buffer;
}

export interface UpdateFilesRequest {
  delete: string[];
  copy: FileToCopy[];
}

const INT32_MAX = 2 ** 31 - 1;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function object(body: unknown, what: string): JsonObject {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest(`${what} must be a JSON object`);
  return body as JsonObject;
}

/** The field, undefined when absent or null (Go leaves the zero value). */
function field(body: JsonObject, name: string): unknown {
  const value = body[name];
  return value === null ? undefined : value;
}

function integer(value: unknown, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value)) throw badRequest(`${name} must be an integer`);
  if (value < min || value > max) throw badRequest(`${name} must be between ${min} and ${max}`);
  return value;
}

function boolean(value: unknown, name: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw badRequest(`${name} must be true or false`);
  return value;
}

function text(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw badRequest(`${name} must be a string`);
  if (value.includes('\0')) throw badRequest(`${name} must not contain NUL characters`);
  return value;
}

function array(value: unknown, name: string): readonly unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw badRequest(`${name} must be an array`);
  return value;
}

function required<T>(value: T | undefined, name: string): T {
  if (value === undefined) throw badRequest(`${name} is required`);
  return value;
}

/** Go decodes []byte from standard base64 (padding required; line breaks skipped). */
function base64(value: unknown, name: string): Buffer {
  const encoded = text(value, name);
  if (encoded === undefined) return Buffer.alloc(0);
  const compact = encoded.replace(/[\r\n]/g, '');
  if (compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) throw badRequest(`${name} must be base64 (standard alphabet, padded)`);
  return Buffer.from(compact, 'base64');
}

/** POST /runners. */
export function runnerRequest(body: unknown): RunnerRequest {
  const fields = object(body, 'the runner request');
  return {
    executionEnvironmentId: required(integer(field(fields, 'executionEnvironmentId'), 'executionEnvironmentId', 0, Number.MAX_SAFE_INTEGER), 'executionEnvironmentId'),
    inactivityTimeout: integer(field(fields, 'inactivityTimeout'), 'inactivityTimeout', 0, INT32_MAX) ?? 0,
  };
}

/** PUT /execution-environments/{id}; the ID is the path's (a body's `id` is ignored, as Poseidon does). */
export function environmentRequest(body: unknown): EnvironmentRequest {
  const fields = object(body, 'the execution environment');
  return {
    prewarmingPoolSize: integer(field(fields, 'prewarmingPoolSize'), 'prewarmingPoolSize', 0, INT32_MAX) ?? 0,
    cpuLimit: integer(field(fields, 'cpuLimit'), 'cpuLimit', 0, INT32_MAX) ?? 0,
    memoryLimit: integer(field(fields, 'memoryLimit'), 'memoryLimit', 0, INT32_MAX) ?? 0,
    image: text(field(fields, 'image'), 'image') ?? '',
    networkAccess: boolean(field(fields, 'networkAccess'), 'networkAccess') ?? false,
    exposedPorts: array(field(fields, 'exposedPorts'), 'exposedPorts').map((port, i) => required(integer(port, `exposedPorts[${i}]`, 0, 65_535), `exposedPorts[${i}]`)),
  };
}

/** POST /runners/{id}/execute. */
export function executionRequest(body: unknown): ExecutionRequest {
  const fields = object(body, 'the execution request');
  const command = required(text(field(fields, 'command'), 'command'), 'command');
  // Poseidon's API refuses it (swagger: "Single quotation ' can not be used").
  if (command.includes("'")) throw badRequest(MESSAGES.forbiddenCharacter);
  const environment = field(fields, 'environment') ?? {};
  const variables = Object.entries(object(environment, 'environment')).map(([name, value]) => {
    if (!ENV_NAME.test(name)) throw badRequest(`environment: ${JSON.stringify(name)} is not a variable name`);
    return [name, required(text(value, `environment.${name}`), `environment.${name}`)] as const;
  });
  return {
    command,
    privilegedExecution: boolean(field(fields, 'privilegedExecution'), 'privilegedExecution') ?? false,
    timeLimit: integer(field(fields, 'timeLimit'), 'timeLimit', 0, INT32_MAX) ?? 0,
    environment: Object.fromEntries(variables),
  };
}

/** PATCH /runners/{id}/files. */
export function updateFilesRequest(body: unknown): UpdateFilesRequest {
  const fields = object(body, 'the file update');
  const path = (value: unknown, name: string): string => {
    const given = required(text(value, name), name);
    if (given === '') throw badRequest(`${name} must not be empty`);
    return given;
  };
  return {
    delete: array(field(fields, 'delete'), 'delete').map((entry, i) => path(entry === null ? undefined : entry, `delete[${i}]`)),
    copy: array(field(fields, 'copy'), 'copy').map((entry, i) => {
      const file = object(entry, `copy[${i}]`);
      return { path: path(field(file, 'path'), `copy[${i}].path`), content: base64(field(file, 'content'), `copy[${i}].content`) };
    }),
  };
}
