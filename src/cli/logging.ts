import type { Command } from 'commander';
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import type { Clock } from '../clock/index.js';
import { formatTime, paint, type DescribeOptions } from '../supervisor/describe.js';
import { structuredLogger, type LogLevel, type Logger } from '../logger.js';
import type { LogFormat } from './logOptions.js';
import { useColor } from './commandIo.js';

/**
 * The command line's one logger: pino, writing to stderr (stdout is the command's own output), as
 * JSON lines (`--log-format json`, for log shippers) or as one readable line per record (`pretty`).
 * Times come from the command's clock, so a replay logs the recording's times. The pretty form is
 * a dozen lines of formatting over pino's JSON instead of pino-pretty (a dozen dependencies and a
 * worker thread for what a terminal needs here).
 */


export interface CliLoggerOptions {
  format: LogFormat;
  level: LogLevel | 'silent';
  clock: Clock;
  /** Where lines go (default: process.stderr). */
  write?: (line: string) => void;
  color?: boolean;
  /** Replaced by `[redacted]` wherever they appear (the tokens of the environment). */
  secrets?: readonly (string | undefined)[];
}

const LEVEL_TONES: Readonly<Record<string, Parameters<typeof paint>[1]>> = { debug: 'dim', info: 'note', warn: 'bad', error: 'bad', fatal: 'bad' };

/** A value as it reads after `key=`: bare when it is one word, JSON otherwise. */
function fieldText(value: unknown): string {
  if (typeof value === 'string') return /^[\w.:/@+-]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}

/** One pino JSON record as a line for a person: time, level, message, then key=value fields. */
export function prettyRecord(json: string, options: DescribeOptions = {}): string {
  const { time, level, msg, pid: _pid, hostname: _hostname, ...fields } = JSON.parse(json) as Record<string, unknown>;
  const label = String(level);
  const head = `${paint(typeof time === 'string' ? time : formatTime(Number(time)), 'dim', options)} ${paint(label.toUpperCase().padEnd(5), LEVEL_TONES[label] ?? 'note', options)}`;
  const rest = Object.entries(fields).map(([key, value]) => `${paint(`${key}=`, 'dim', options)}${fieldText(value)}`);
  return [head, String(msg ?? ''), ...rest].join(' ');
}

/** The pino instance behind the command line's logger (exported for `warden serve` and tests). */
export function createPinoLogger(options: CliLoggerOptions): PinoLogger {
  const write = options.write ?? ((line: string) => void process.stderr.write(line));
  const style = { color: options.color ?? false };
  const destination: DestinationStream = {
    write: options.format === 'json' ? write : (line: string) => write(`${prettyRecord(line, style)}\n`),
  };
  return pino(
    {
      level: options.level,
      timestamp: () => `,"time":"${formatTime(options.clock.now())}"`,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}

/** The logger commands hand to the supervisor and use themselves: pino underneath, tokens removed. */
export function createCliLogger(options: CliLoggerOptions): Logger {
  return structuredLogger(createPinoLogger(options), options.secrets ?? []);
}

/** The logger of a command run from the command line: the global --log-format / --log-level, on stderr; `fallback` where they are not given (a configuration file's). */
export function processLogger(
  command: Pick<Command, 'optsWithGlobals' | 'getOptionValueSourceWithGlobals'>,
  clock: Clock,
  fallback: { format?: LogFormat | undefined; level?: LogLevel | undefined } = {},
): Logger {
  const { logFormat, logLevel } = command.optsWithGlobals<{ logFormat?: LogFormat; logLevel?: LogLevel | 'silent' }>();
  const given = (option: string): boolean => ![undefined, 'default'].includes(command.getOptionValueSourceWithGlobals(option));
  const terminal = process.stderr.isTTY === true;
  return createCliLogger({
    format: (given('logFormat') ? logFormat : fallback.format) ?? (terminal ? 'pretty' : 'json'),
    level: (given('logLevel') ? logLevel : fallback.level) ?? 'info',
    clock,
    color: useColor(process.stderr, process.env),
    secrets: [process.env.NOMAD_TOKEN, process.env.CONSUL_HTTP_TOKEN],
  });
}
