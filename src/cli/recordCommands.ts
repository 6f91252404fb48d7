import type { Command } from 'commander';
import { VirtualClock, systemClock, type Clock } from '../clock/index.js';
import { readTrafficRecording } from '../nomad/recording/format.js';
import { processIo, type CommandIo } from './commandIo.js';
import { gate } from './gateCommand.js';
import { processLogger } from './logging.js';
import { replayRecording, withRecording, type RecordedCommand } from './recording.js';
import { watch, type WatchOptions } from './watchCommand.js';

/** `warden record <file>` and `warden replay <file>` (see recording.ts). */

/** The command a recording holds, run again over it. */
export async function replay(file: string, options: { json?: boolean; speed?: number }, io: Omit<CommandIo, 'clock'>, logger?: (clock: Clock) => CommandIo['logger']): Promise<number> {
  const recording = readTrafficRecording(file);
  const clock = new VirtualClock({ start: recording.header.start });
  const replayIo = { ...io, ...(logger ? { logger: logger(clock) } : {}) };
  const command = recording.header.command as RecordedCommand;
  const json = options.json === undefined ? {} : { json: options.json };
  const run = (commandIo: CommandIo): Promise<number> =>
    command.name === 'gate' ? gate(command.options.jobId, { ...command.options, ...json }, commandIo) : watch({ ...command.options, ...json }, commandIo);
  return replayRecording(recording, { clock, ...(options.speed === undefined ? {} : { speed: options.speed }) }, replayIo, run);
}

/** `warden record` run from the command line (its options as commandLine/record.ts parses them). */
export async function recordAction(file: string, options: WatchOptions, command: Command): Promise<void> {
  const { namespace, jobPrefix, job, shard } = options;
  const recorded: RecordedCommand = { name: 'watch', options: { ...(namespace ? { namespace } : {}), ...(jobPrefix ? { jobPrefix } : {}), ...(job ? { job } : {}), ...(shard ? { shard } : {}) } };
  const io = { ...processIo(), logger: processLogger(command, systemClock) };
  process.exitCode = await withRecording(file, recorded, io, (recordingIo) => watch(options, recordingIo));
}

/** `warden replay` run from the command line. */
export async function replayAction(file: string, options: { json?: boolean; speed?: number }, command: Command): Promise<void> {
  process.exitCode = await replay(file, options, processIo(), (clock) => processLogger(command, clock));
}
