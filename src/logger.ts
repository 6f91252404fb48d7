/**
 * The supervisor's structured logging. Library code never writes to the console: the embedding
 * application passes where records go (a LogSink), or gets silence.
 *
 * Two conventions exist for a structured log call: pino's and bunyan's `info(fields, message)`, and
 * the message-first `info(message, fields)` Warden's own code was written with. Warden's code calls a
 * Logger, which takes either; whatever sink it is given is always called as pino is, fields first,
 * so a pino (or bunyan) instance is passed as it is, with no glue, and keeps every field as a field.
 * Secrets (the Nomad and Consul tokens) are replaced in messages and fields before a record reaches
 * the sink.
 */
import { scrubSecrets } from './secrets.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

export type LogFields = Readonly<Record<string, unknown>>;

/** One level of a Logger: the message first (Warden's order) or the fields first (pino's). */
export interface LogMethod {
  (message: string, fields?: LogFields): void;
  (fields: LogFields, message?: string): void;
}

/** What Warden's code logs through (see structuredLogger). */
export interface Logger {
  debug: LogMethod;
  info: LogMethod;
  warn: LogMethod;
  error: LogMethod;
}

/**
 * Where records go, called as pino is: `info(fields, message)`. A pino or bunyan logger fits as it
 * is, and so does `console`; so does any Logger.
 */
export interface LogSink {
  debug(fields: LogFields, message: string): void;
  info(fields: LogFields, message: string): void;
  warn(fields: LogFields, message: string): void;
  error(fields: LogFields, message: string): void;
}

const ignore = (): void => undefined;

export const silentLogger: Logger = { debug: ignore, info: ignore, warn: ignore, error: ignore };

function scrub(value: unknown, secrets: readonly string[], depth = 0): unknown {
  if (typeof value === 'string') return scrubSecrets(value, secrets);
  if (value instanceof Error) return scrub(value.message, secrets, depth);
  if (depth > 4 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => scrub(item, secrets, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, scrub(item, secrets, depth + 1)]));
}

function knownSecrets(secrets: readonly (string | undefined)[]): string[] {
  return secrets.filter((secret): secret is string => typeof secret === 'string' && secret.length > 0);
}

/** Loggers made here, which need no second wrapping. */
const structured = new WeakSet<Logger>();

/**
 * The Logger Warden's code calls, over any sink: calls in either order reach the sink as
 * `(fields, message)`, with every occurrence of `secrets` and of every registered one (src/secrets.ts)
 * replaced (a safety net under the rule that errors never carry tokens). A Logger made here is
 * returned as it is when no secrets are added.
 */
export function structuredLogger(sink: LogSink, secrets: readonly (string | undefined)[] = []): Logger {
  const known = knownSecrets(secrets);
  if (known.length === 0 && structured.has(sink as Logger)) return sink as Logger;
  const clean = <T>(value: T): T => scrub(value, known) as T;
  const method =
    (level: LogLevel): LogMethod =>
    (first: string | LogFields, second?: string | LogFields): void => {
      const [message, fields] = typeof first === 'string' ? [first, second as LogFields | undefined] : [second as string | undefined, first];
      sink[level](clean(fields ?? {}), clean(message ?? ''));
    };
  const logger: Logger = { debug: method('debug'), info: method('info'), warn: method('warn'), error: method('error') };
  structured.add(logger);
  return logger;
}
