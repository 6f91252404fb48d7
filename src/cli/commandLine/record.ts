import type { Command } from 'commander';
import { jobShard, positiveNumber } from '../argumentParsers.js';

/** `warden record`'s arguments, options and help (run by recordCommands.ts). */
export function recordCommandLine(program: Command): Command {
  return program
    .command('record')
    .description('Follow the cluster at NOMAD_ADDR as `watch` does, writing everything Warden reads to <file> (tokens never written)')
    .argument('<file>', 'the recording to write (one NDJSON file)')
    .option('-n, --namespace <namespace...>', 'namespaces to watch (default NOMAD_NAMESPACE or "default"; "*" for all)')
    .option('-p, --job-prefix <prefix...>', 'only jobs whose id starts with one of these')
    .option('-j, --job <id...>', 'only these jobs (exact ids): Nomad sends only their events')
    .option('--shard <i/n>', 'judge only the jobs of shard i of n', jobShard)
    .option('--json', 'one JSON object a line');
}

/** `warden replay`'s arguments, options and help (run by recordCommands.ts). */
export function replayCommandLine(program: Command): Command {
  return program
    .command('replay')
    .description('Run a recorded command again over its recording, on a simulated clock: the same verdicts at the same times, every time')
    .argument('<file>', 'a recording made by `warden record` or `warden gate --record`')
    .option('--json', 'one JSON object a line')
    .option('--speed <factor>', 'play at this many times the recorded pace (default: as fast as possible)', positiveNumber);
}
