import { Option, type Command } from 'commander';
import { jobShard, listenAddress, portNumber } from '../argumentParsers.js';

/** `warden watch`'s arguments, options and help (run by watchCommand.ts). */
export function watchCommandLine(program: Command): Command {
  return program
    .command('watch')
    .description("Follow the cluster at NOMAD_ADDR and print each allocation's state changes and verdicts")
    .addOption(new Option('-n, --namespace <namespace...>', 'namespaces to watch (default NOMAD_NAMESPACE or "default"; "*" for all)'))
    .addOption(new Option('-p, --job-prefix <prefix...>', 'only jobs whose id starts with one of these'))
    .addOption(new Option('-j, --job <id...>', 'only these jobs (exact ids): Nomad sends only their events'))
    .option('--shard <i/n>', 'judge only the jobs that hash to shard i of n (n processes split the cluster, each job judged by one)', jobShard)
    .option('--json', 'one JSON object a line')
    .option('--inspect [port]', 'serve the inspector web page (live state charts and reasons) on this port, or any free one', portNumber)
    .option('--metrics [addr]', 'serve Prometheus metrics at http://[host:]port/metrics (default 127.0.0.1, any free port)', listenAddress);
}
