import type { Command } from 'commander';
import { nonNegativeInteger } from '../argumentParsers.js';

/** How long a gate waits for a verdict unless told (`--timeout`). */
export const DEFAULT_TIMEOUT_S = 900;

/** `warden gate`'s arguments, options and help (run by gateCommand.ts). */
export function gateCommandLine(program: Command): Command {
  return program
    .command('gate')
    .description(
      "Wait for a job's deployment to end as Nomad ends it, with Warden's reasons: exit 0 when successful, 1 with the reasons when not, 2 when Nomad is unreachable, 3 when healthy canaries await promotion, 130 when interrupted",
    )
    .argument('<job>', 'job id')
    .option('--version <n>', 'job version to judge (default: the current one)', nonNegativeInteger)
    .option('-n, --namespace <namespace>', 'namespace (default NOMAD_NAMESPACE or "default")')
    .option('--timeout <seconds>', `give up after this long (default ${DEFAULT_TIMEOUT_S})`, nonNegativeInteger)
    .option('--fail-fast', 'fail at the first unhealthy allocation (or group that cannot be placed) instead of waiting for Nomad to end the deployment')
    .option('--json', 'print the result as one JSON object')
    .option('--record <file>', 'write everything the gate reads to <file> (tokens never written), to replay it later')
    .option('--replay <file>', 'judge over a recording (warden record, gate --record) instead of a cluster, on a simulated clock');
}
