/**
 * The supervisor's structured logger. Library code never writes to the console: the embedding
 * application passes a Logger (pino, winston and console all fit with a line of glue), or gets
 * silence. Fields are plain data; secrets are removed before a record reaches the sink.
 */
import { scrubSecrets } from '../secrets.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

function scrub(value: unknown, secrets: readonly string[], depth = 0): unknown {
  if (typeof value === 'string') return scrubSecrets(value, secrets);
  if (value instanceof Error) return scrub(value.message, secrets, depth);
  if (depth > 4 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => scrub(item, secrets, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, scrub(item, secrets, depth + 1)]));
}

/**
 * A logger that replaces every occurrence of the given secrets (the Nomad token) and of every
 * registered one (src/secrets.ts) in messages and fields before passing the record on: a safety net
 * under the rule that errors never carry tokens.
 */
export function redactingLogger(sink: Logger, secrets: readonly (string | undefined)[]): Logger {
  const known = secrets.filter((secret): secret is string => typeof secret === 'string' && secret.length > 0);
  const wrap =
    (level: LogLevel) =>
    (message: string, fields?: LogFields): void => {
      const clean = scrub(message, known) as string;
      if (fields === undefined) sink[level](clean);
      else sink[level](clean, scrub(fields, known) as LogFields);
    };
  return { debug: wrap('debug'), info: wrap('info'), warn: wrap('warn'), error: wrap('error') };
}
