import { LOG_LEVELS, type LogLevel } from '../logger.js';

/** The choices of the global --log-format and --log-level, apart from the logger (pino loads only when a command logs). */

export type LogFormat = 'json' | 'pretty';

export const LOG_FORMATS: readonly LogFormat[] = ['json', 'pretty'];

/** The levels `--log-level` takes: Warden's, plus `silent`. */
export const CLI_LOG_LEVELS: readonly (LogLevel | 'silent')[] = [...LOG_LEVELS, 'silent'];
