/**
 * `warden serve`: Poseidon's runner API (REST + WebSocket, src/api) over runner pools on the Nomad
 * that NOMAD_* names, so a client written for Poseidon (CodeOcean) can use Warden instead. With
 * `--dev`, over an embedded FakeNomad acting as a cluster whose runners are real local processes:
 * a one-command playground, as `nomad agent -dev` is. Runs until SIGTERM or Ctrl-C (exit 0): open
 * executions are told the server is going away before their sockets close. A Nomad that does not
 * answer at the start is tried again until it does (GET /health says why meanwhile), as Poseidon
 * does; exit 2 when its event stream gives up (a refused token).
 */
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { Option, type Command } from 'commander';
import { PoseidonApi, API_BASE_PATH } from '../api/api.js';
import { ApiMetrics } from '../api/metrics.js';
import { startApiServer } from '../api/server.js';
import { systemClock } from '../clock/index.js';
import { startInspector } from '../inspect/inspector.js';
import type { ListenAddress } from '../metrics/server.js';
import type { WireLayer } from '../nomad/wire.js';
import type { QuietDriver } from '../testing/quiet.js';
import { WardenMetrics } from '../metrics/wardenMetrics.js';
import { NomadClient } from '../nomad/client.js';
import { nomadConfigFromEnv, type NomadConfig } from '../nomad/config.js';
import { createRunnerPools, type RunnerPoolsOptions } from '../runners/pools.js';
import { DRIVER_PREFERENCE, driverProfile, preferredDriver } from '../runners/drivers.js';
import { RUNNER_GROUP, RUNNER_TASK, type RunnerDriver, type RunnerNetwork } from '../runners/poseidonFormat.js';
import type { Job } from '../nomad/types.js';
import { isRetryable, readTemplateJobFile } from './templateJobFile.js';
import { registerSecret, withoutCredentials } from '../secrets.js';
import { createSupervisor } from '../supervisor/index.js';
import { paint } from '../supervisor/describe.js';
import { errorMessage } from '../errorMessage.js';
import { argvWords, fraction, listenAddress, portNumber } from './argumentParsers.js';
import { processIo, type CommandIo } from './commandIo.js';
import { EXIT_INTERNAL, EXIT_UNREACHABLE, EXIT_USAGE } from './exitCodes.js';
import { processLogger } from './logging.js';
import { packageRootOf, packageVersion } from './packageRoot.js';

/** Poseidon's own default address, so a client configured for Poseidon finds Warden there. */
export const DEFAULT_LISTEN: ListenAddress = { host: '127.0.0.1', port: 7200 };

/** Where the token is read from: Warden's name, or the variable a Poseidon deployment already sets. */
export const TOKEN_VARIABLES = ['WARDEN_SERVE_TOKEN', 'POSEIDON_SERVER_TOKEN'] as const;

export interface ServeOptions {
  listen?: ListenAddress;
  /** An embedded FakeNomad whose runners are local processes, instead of NOMAD_*. */
  dev?: boolean;
  /**
   * Task driver of the runners of environments made through the API. Default: the first of docker,
   * raw_exec, exec healthy on a ready node of the cluster (docker when the nodes cannot be read); --dev: raw_exec.
   */
  driver?: RunnerDriver;
  datacenters?: string[];
  /** argv prefix of unprivileged executions, for every driver (default per driver: src/runners/drivers.ts). */
  setuser?: string[];
  /** Executions under a pseudo-terminal, as Poseidon runs them (default true); without one they read no input. */
  tty?: boolean;
  /** Poseidon's prewarmingpoolthreshold in [0, 1): /health is 503 while a pool is emptier (default 0: off). */
  poolAlertThreshold?: number;
  /** PEM files: serve HTTPS and wss:// WebSocket URLs. */
  tlsCert?: string;
  tlsKey?: string;
  /** Serve the inspector (pools included) on this port (0: any free one). */
  inspect?: number;
  /** Poseidon's server.templatejobfile: a template job of your own (HCL or JSON). */
  templateJobFile?: string;
  /** Poseidon's nomad.network: the network mode of runners with network access, and their DNS. */
  networkMode?: string;
  networkDnsServers?: string[];
  networkDnsSearches?: string[];
  networkDnsOptions?: string[];
  /** Poseidon's nomad.disableforcepull: never pull images again. */
  disableForcePull?: boolean;
}

/** Poseidon's nomad.network from the flags (undefined: Warden's default per driver). */
function runnerNetwork(options: ServeOptions): RunnerNetwork | undefined {
  const { networkMode: mode, networkDnsServers: servers, networkDnsSearches: searches, networkDnsOptions: dnsOptions } = options;
  const dns = servers ?? searches ?? dnsOptions ? { ...(servers ? { servers } : {}), ...(searches ? { searches } : {}), ...(dnsOptions ? { options: dnsOptions } : {}) } : undefined;
  if (mode === undefined && dns === undefined) return undefined;
  return { ...(mode === undefined ? {} : { mode }), ...(dns === undefined ? {} : { dns }) };
}

/** The runner task's driver a template job file names, if it is one Warden runs runners on. */
function driverOf(job: Job | undefined): RunnerDriver | undefined {
  const driver = job?.TaskGroups?.find((group) => group.Name === RUNNER_GROUP)?.Tasks.find((task) => task.Name === RUNNER_TASK)?.Driver;
  return driver === 'docker' || driver === 'exec' || driver === 'raw_exec' ? driver : undefined;
}

/** The command's I/O; `quiet`: a test's driver of its VirtualClock, to which --dev adds its cluster (as the demo does). */
export type ServeIo = CommandIo & { quiet?: QuietDriver };

interface Cluster {
  config: Pick<NomadConfig, 'address'> & Partial<NomadConfig>;
  /** The Nomad client's wire layer (--dev: a tally for the quiet driver). */
  wire?: WireLayer;
  pools: RunnerPoolsOptions;
  tty: boolean;
  notes: string[];
  close(): Promise<void>;
}

/** The embedded playground: a FakeNomad acting as a cluster, runners as local processes. */
async function devCluster(io: ServeIo, options: ServeOptions): Promise<Cluster> {
  const [{ FakeNomad }, { loadNodePty }, { WireTally }] = await Promise.all([
    import('../testing/fakeNomad.js'),
    import('../testing/fakeExec/nodePty.js'),
    import('../testing/quiet.js'),
  ]);
  const clock = io.clock ?? systemClock;
  // A HOME of its own: the runners' shells do not read this machine's start-up files.
  const fake = await FakeNomad.start({ clock, acting: true, exec: { env: { HOME: tmpdir() } } });
  const tally = new WireTally();
  const leave = io.quiet?.add({ server: fake.activity, client: tally });
  const root = process.getuid?.() === 0;
  const notes = [
    `runners: real local processes (raw_exec) on an embedded FakeNomad at ${fake.address}: no isolation, a playground`,
    ...(root ? [] : ['unprivileged executions run as your own user (only root can drop to another)']),
  ];
  // A terminal needs node-pty (an optional dependency); without it, executions run on pipes.
  const tty = options.tty !== false && (await loadNodePty().then(() => true, () => false));
  if (options.tty !== false && !tty) notes.push('node-pty is not installed: executions run without a terminal and read no input (npm install node-pty for one)');
  return {
    config: { address: fake.address },
    wire: tally.layer,
    // Not root and no wrapper given: nobody to drop to, so nothing to check (the playground runs everything as you).
    pools: options.setuser !== undefined ? { setuser: options.setuser } : root ? {} : { setuser: [], checkUnprivileged: false },
    tty,
    notes,
    close: async () => {
      leave?.();
      await fake.close();
    },
  };
}

function realCluster(io: ServeIo, options: ServeOptions): Cluster {
  return {
    config: nomadConfigFromEnv(io.env),
    pools: options.setuser === undefined ? {} : { setuser: options.setuser },
    tty: options.tty !== false,
    notes: [],
    close: async () => undefined,
  };
}

function tokenOf(env: CommandIo['env']): string | undefined {
  for (const name of TOKEN_VARIABLES) {
    const value = env[name]?.trim();
    if (value !== undefined && value !== '') return value;
  }
  return undefined;
}

/** The driver of runners where none is given: what the cluster's nodes run (see drivers.ts), and why, in words. */
async function clusterDriver(nomad: NomadClient): Promise<{ driver: RunnerDriver; why: string }> {
  try {
    const nodes = (await nomad.listNodes()).body;
    const driver = preferredDriver(nodes);
    if (driver !== undefined) return { driver, why: `the first of ${DRIVER_PREFERENCE.join(', ')} healthy on the cluster's ${nodes.length} node(s); --driver to choose` };
    return { driver: 'docker', why: `none of ${DRIVER_PREFERENCE.join(', ')} is healthy on the cluster's ${nodes.length} node(s): docker, Poseidon's; --driver to choose` };
  } catch (error) {
    return { driver: 'docker', why: `the nodes could not be read (${errorMessage(error)}): docker, Poseidon's; --driver to choose` };
  }
}

/** What the runners of this driver are isolated by, and who runs what, as serve prints it at the start. */
function isolationNotes(driver: RunnerDriver, setuser: readonly string[] | undefined): string[] {
  const profile = driverProfile(driver);
  const notes = [`isolation (${driver}): ${profile.isolation}`];
  if (setuser !== undefined) notes.push(`unprivileged executions: ${setuser.length === 0 ? 'as the privileged user (no wrapper)' : setuser.join(' ')} (--setuser)`);
  return notes;
}

/** The curl lines that try it out (the token by its variable, never its value). */
function curlExample(base: string, driver: RunnerDriver, tokenVariable: string | undefined): string[] {
  const auth = tokenVariable === undefined ? '' : ` -H "Poseidon-Token: $${tokenVariable}"`;
  const image = driver === 'docker' ? 'openhpi/co_execenv_python:3.8' : 'local';
  const environment = JSON.stringify({ prewarmingPoolSize: 2, cpuLimit: 100, memoryLimit: 256, image, networkAccess: false, exposedPorts: [] });
  return [
    `curl -X PUT${auth} -H 'Content-Type: application/json' ${base}/execution-environments/1 -d '${environment}'`,
    `curl -X POST${auth} -H 'Content-Type: application/json' ${base}/runners -d '{"executionEnvironmentId":1,"inactivityTimeout":60}'`,
  ];
}

export async function serve(options: ServeOptions, io: ServeIo): Promise<number> {
  const clock = io.clock ?? systemClock;
  const style = { color: io.color ?? false };
  const fail = io.error ?? io.write;
  const token = tokenOf(io.env);
  registerSecret(token);
  const tls = options.tlsCert === undefined || options.tlsKey === undefined ? undefined : { cert: readFileSync(options.tlsCert), key: readFileSync(options.tlsKey) };
  const cluster = options.dev === true ? await devCluster(io, options) : realCluster(io, options);
  const nomad = new NomadClient(cluster.config, { ...io.transport, ...(cluster.wire ? { wire: cluster.wire } : {}), clock });
  // A template job file is read now: one that can never be a job is the command line's fault.
  let templateJob: Job | (() => Promise<Job>) | undefined;
  const { templateJobFile } = options;
  if (templateJobFile !== undefined) {
    try {
      templateJob = await readTemplateJobFile(templateJobFile, nomad);
    } catch (error) {
      if (!isRetryable(error)) {
        fail(`${paint('error', 'bad', style)} ${errorMessage(error)}`);
        await nomad.close();
        await cluster.close();
        return EXIT_USAGE;
      }
      // Nomad parses it once it answers, with the pools' recovery.
      templateJob = () => readTemplateJobFile(templateJobFile, nomad);
    }
  }
  const fileDriver = driverOf(typeof templateJob === 'function' ? undefined : templateJob);
  const chosen: { driver: RunnerDriver; why: string } =
    options.driver !== undefined ? { driver: options.driver, why: '--driver' }
    : fileDriver !== undefined ? { driver: fileDriver, why: 'the template job file' }
    : options.dev === true ? { driver: 'raw_exec', why: '--dev' }
    : await clusterDriver(nomad);
  const { driver } = chosen;
  const network = runnerNetwork(options);
  const poolOptions: RunnerPoolsOptions = {
    ...cluster.pools,
    ...(templateJob === undefined ? {} : { templateJob }),
    ...(network === undefined ? {} : { network }),
    ...(options.disableForcePull === true ? { disableForcePull: true } : {}),
  };
  const metrics = new WardenMetrics({ clock });
  const inspector = options.inspect === undefined ? undefined : await startInspector({ clock, port: options.inspect, secrets: [cluster.config.token, token] });
  const supervisor = createSupervisor({
    nomad,
    clock,
    streamMonitor: metrics.streamMonitor,
    ...(inspector ? { inspect: inspector.inspect } : {}),
    ...(io.logger ? { logger: io.logger } : {}),
    ...(io.random ? { random: io.random } : {}),
  });
  metrics.observe(supervisor);
  inspector?.attach(supervisor);
  const pools = createRunnerPools(supervisor, poolOptions);
  metrics.countEvaluations(pools.evaluations$);
  const detachPools = inspector?.model.attachPools(pools);
  let exitCode = 0;
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const unreachable = (message: string): void => {
    fail(`${paint('error', 'bad', style)} ${message}`);
    exitCode = EXIT_UNREACHABLE;
    finish();
  };
  pools.unprivilegedChecks$.subscribe(({ environmentId, check }) => {
    if (check.status === 'ok') io.logger?.info({ environmentId, privilegedUid: check.privilegedUid, unprivilegedUid: check.unprivilegedUid }, `environment ${environmentId}: unprivileged executions run as uid ${check.unprivilegedUid}, privileged ones as uid ${check.privilegedUid}`);
  });
  // Each said in the log, with Nomad's words: a recovery that failed (tried again), a runner that cannot start, a stray runner job.
  pools.problems$.subscribe((problem) => {
    io.logger?.warn({ kind: problem.kind, ...(problem.environmentId === undefined ? {} : { environmentId: problem.environmentId }), ...(problem.jobId === undefined ? {} : { jobId: problem.jobId }) }, problem.message);
  });
  void pools.ready.then(() => {
    if (pools.recovered) io.logger?.info({ environments: pools.environmentSummaries().length }, 'runner pools recovered from Nomad');
  });
  supervisor.problems$.subscribe((problem) => {
    if (problem.kind === 'stream-failed') unreachable(`the Nomad event stream gave up: ${problem.message}`);
  });
  io.signal?.addEventListener('abort', () => finish(), { once: true });
  if (io.signal?.aborted) finish();

  let server: Awaited<ReturnType<typeof startApiServer>> | undefined;
  const apiMetrics = new ApiMetrics(metrics.registry);
  try {
    // Served at once: while Nomad does not answer, /health says why and the pools' routes answer 503.
    if (exitCode === 0 && io.signal?.aborted !== true) {
      apiMetrics.observe(pools);
      const api = new PoseidonApi({
        pools,
        clock,
        ...(token === undefined ? {} : { token }),
        environmentDefaults: { driver, ...(options.datacenters ? { datacenters: options.datacenters } : {}) },
        version: packageVersion(packageRootOf(process.argv[1] ?? '.')),
        poolAlertThreshold: options.poolAlertThreshold ?? 0,
        tty: cluster.tty,
        metrics: apiMetrics,
        secure: tls !== undefined,
        ...(io.logger ? { logger: io.logger } : {}),
      });
      server = await startApiServer(api, { listen: options.listen ?? DEFAULT_LISTEN, metrics, clock, ...(tls ? { tls } : {}) });
      const base = `${server.url}${API_BASE_PATH}`;
      io.write(`${paint('Warden serve', 'bold', style)}: Poseidon's runner API at ${paint(base, 'note', style)}`);
      io.write(`  cluster: ${options.dev === true ? 'embedded FakeNomad (--dev)' : withoutCredentials(cluster.config.address)}; runners' driver: ${driver} (${chosen.why})`);
      for (const note of [...cluster.notes, ...isolationNotes(driver, cluster.pools.setuser)]) io.write(`  ${note}`);
      if (driver === 'raw_exec' && options.dev !== true) {
        io.logger?.warn({ driver }, `runners run on raw_exec: ${driverProfile('raw_exec').isolation}; use --driver exec or docker to isolate untrusted code`);
      }
      io.write(`  metrics: ${server.url}/metrics${inspector ? `; inspector: ${inspector.url}` : ''}`);
      io.write(`  authentication: ${token === undefined ? 'none (set WARDEN_SERVE_TOKEN to require a Poseidon-Token)' : 'Poseidon-Token required'}`);
      io.write('Try it:');
      const tokenVariable = token === undefined ? undefined : TOKEN_VARIABLES.find((name) => (io.env[name]?.trim() ?? '') !== '');
      for (const line of curlExample(base, driver, tokenVariable)) io.write(`  ${line}`);
      await finished;
    }
  } catch (error) {
    fail(`${paint('error', 'bad', style)} ${errorMessage(error)}`);
    exitCode = exitCode || EXIT_INTERNAL;
  } finally {
    // Executions are told first, then the pools stop (requests waiting on them get their answer).
    await server?.close(() => supervisor.stop());
    await supervisor.stop();
    apiMetrics.close();
    metrics.close();
    detachPools?.();
    await inspector?.close();
    await nomad.close();
    await cluster.close();
  }
  return exitCode;
}

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

export function registerServeCommand(program: Command): void {
  program
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
    .addHelpText('after', isolationHelp())
    .action(async (options: Omit<ServeOptions, 'inspect' | 'datacenters'> & { datacenter?: string[]; inspect?: number | true }, command: Command) => {
      const { inspect, datacenter, ...rest } = options;
      if ((rest.tlsCert === undefined) !== (rest.tlsKey === undefined)) command.error('--tls-cert and --tls-key go together', { exitCode: EXIT_USAGE });
      process.exitCode = await serve(
        { ...rest, ...(datacenter ? { datacenters: datacenter } : {}), ...(inspect === undefined ? {} : { inspect: inspect === true ? 0 : inspect }) },
        { ...processIo(), logger: processLogger(command, systemClock) },
      );
    });
}
