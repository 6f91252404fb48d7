import { Option, type Command } from 'commander';
import type { ListenAddress } from '../../metrics/listenAddress.js';
import { driverProfile } from '../../runners/drivers.js';
import { argvWords, fraction, listenAddress, portNumber } from '../argumentParsers.js';

/** Poseidon's own default address, so a client configured for Poseidon finds Warden there. */
export const DEFAULT_LISTEN: ListenAddress = { host: '127.0.0.1', port: 7200 };

/** Words laid out in lines of at most `width` columns, the first after `first`, the others after `rest`. */
function wrapped(text: string, first: string, rest: string, width = 100): string[] {
  const lines: string[] = [];
  let line = first;
  for (const word of text.split(' ')) {
    const blank = line === first || line === rest;
    if (!blank && line.length + 1 + word.length > width) {
      lines.push(line);
      line = rest;
    }
    line += (line === first || line === rest ? '' : ' ') + word;
  }
  return [...lines, line];
}

/** `serve --help`'s account of what each driver isolates. */
function isolationHelp(): string {
  const drivers = (['docker', 'exec', 'raw_exec'] as const).flatMap((driver) => wrapped(`${driverProfile(driver).isolation}.`, `  ${driver}: `, '    '));
  const after = "exec and raw_exec tasks inherit the Nomad agent's environment: executions there start from a clean one (PATH, HOME, TERM, LANG, TZ and the request's variables). On raw_exec the file routes write as root only within the runner's working directory; absolute paths and paths that leave it are written as the unprivileged user. Unprivileged executions are checked on each environment's first runner: a wrapper that does not work there is logged, turns GET /health to 503, and is the error of every unprivileged execution.";
  return ['', "Isolation of the runners, by driver (exec and raw_exec as measured on Nomad 1.1.2; docker as Poseidon's template sets it):", ...drivers, ...wrapped(after, '  ', '  ')].join('\n');
}

/** `warden serve`'s options and help (run by serveCommand.ts). */
export function serveCommandLine(program: Command): Command {
  return program
    .command('serve')
    .description("Serve Poseidon's runner API (REST + WebSocket) over runner pools on the Nomad at NOMAD_ADDR, or on an embedded one (--dev)")
    .option('--listen <addr>', `[host:]port to listen on (default ${DEFAULT_LISTEN.host}:${DEFAULT_LISTEN.port}, Poseidon's)`, listenAddress)
    .option('--dev', 'an embedded FakeNomad acting as a cluster, its runners real local processes: a playground, no Nomad needed')
    .addOption(new Option('--driver <driver>', 'task driver of the runners (default: the first of docker, raw_exec, exec healthy on the cluster\'s nodes; --dev: raw_exec); see "Isolation" below').choices(['docker', 'exec', 'raw_exec']))
    .option('--datacenter <dc...>', 'datacenters of the runner jobs (default dc1)')
    .option('--setuser <command>', 'the wrapper that runs unprivileged executions as another user, on every driver (default: "/sbin/setuser user" on docker, Poseidon\'s images; "setpriv --reuid=65534 --regid=65534 --clear-groups" on exec and raw_exec); checked on each environment\'s first runner', argvWords)
    .option('--no-tty', 'run executions without a pseudo-terminal (Poseidon runs them with one); they then read no input')
    .option('--pool-alert-threshold <fraction>', 'GET /health answers 503 while an environment has less than this part of its pool idle (0 turns it off)', fraction, 0)
    .option('--tls-cert <file>', 'serve HTTPS with this PEM certificate (with --tls-key); WebSocket URLs are then wss://')
    .option('--tls-key <file>', 'the PEM key of --tls-cert')
    .option('--inspect [port]', 'serve the inspector web page (pools and runners included) on this port, or any free one', portNumber)
    .option('--template-job-file <file>', "Poseidon's server.templatejobfile: a template job of your own (HCL, parsed by Nomad, or JSON); environments are laid over it, the rest of it kept")
    .option('--network-mode <mode>', "Poseidon's nomad.network.mode: the network of runners with network access (default bridge for docker, host for exec/raw_exec), e.g. cni/secure-bridge")
    .option('--network-dns-servers <ip...>', "Poseidon's nomad.network.dns.servers: DNS servers of runners with network access")
    .option('--network-dns-searches <domain...>', "Poseidon's nomad.network.dns.searches")
    .option('--network-dns-options <option...>', "Poseidon's nomad.network.dns.options")
    .option('--disable-force-pull', "Poseidon's nomad.disableforcepull: never pull images again (by default the template and the runners a PUT starts pull theirs)")
    .option('--config <file>', "a Poseidon configuration file, with Poseidon's keys: POSEIDON_* variables over it, these options over both (default: ./configuration.yaml when there is one, as Poseidon; not with --dev)")
    .option('--no-config', 'read no configuration file (POSEIDON_* variables still apply)')
    .addHelpText('after', isolationHelp());
}
