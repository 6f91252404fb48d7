import type { Command } from 'commander';
import { VirtualClock, systemClock, type Clock } from '../clock/index.js';
import { readTrafficRecording } from '../nomad/recording/format.js';
import { jobShard, positiveNumber } from './argumentParsers.js';
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

export function registerRecordCommands(program: Command): void {
  program
    .command('record')
    .description('Follow the cluster at NOMAD_ADDR as `watch` does, writing everything Warden reads to <file> (tokens never written)')
    .argument('<file>', 'the recording to write (one NDJSON file)')
    .option('-n, --namespace <namespace...>', 'namespaces to watch (default NOMAD_NAMESPACE or "default"; "*" for all)')
    .option('-p, --job-prefix <prefix...>', 'only jobs whose id starts with one of these')
    .option('-j, --job <id...>', 'only these jobs (exact ids): Nomad sends only their events')
    .option('--shard <i/n>', 'judge only the jobs of shard i of n', jobShard)
    .option('--json', 'one JSON object a line')
    .action(async (file: string, options: WatchOptions, command: Command) => {
      const { namespace, jobPrefix, job, shard } = options;
      const recorded: RecordedCommand = { name: 'watch', options: { ...(namespace ? { namespace } : {}), ...(jobPrefix ? { jobPrefix } : {}), ...(job ? { job } : {}), ...(shard ? { shard } : {}) } };
      const io = { ...processIo(), logger: processLogger(command, systemClock) };
      process.exitCode = await withRecording(file, recorded, io, (recordingIo) => watch(options, recordingIo));
    });
  program
    .command('replay')
    .description('Run a recorded command again over its recording, on a simulated clock: the same verdicts at the same times, every time')
    .argument('<file>', 'a recording made by `warden record` or `warden gate --record`')
    .option('--json', 'one JSON object a line')
    .option('--speed <factor>', 'play at this many times the recorded pace (default: as fast as possible)', positiveNumber)
    .action(async (file: string, options: { json?: boolean; speed?: number }, command: Command) => {
      process.exitCode = await replay(file, options, processIo(), (clock) => processLogger(command, clock));
    });
}
