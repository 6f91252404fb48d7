/**
 * `warden serve`: Poseidon's runner API (REST + WebSocket, src/api) over runner pools on the Nomad
 * that NOMAD_* names, so a client written for Poseidon (CodeOcean) can use Warden instead. With
 * `--dev`, over an embedded FakeNomad acting as a cluster whose runners are real local processes:
 * a one-command playground, as `nomad agent -dev` is. A Poseidon deployment's configuration works
 * as it is: its file (--config, else ./configuration.yaml) and POSEIDON_* variables under the
 * command line's options (poseidonConfiguration.ts, serveConfiguration.ts). Runs until SIGTERM or
 * Ctrl-C (exit 0): open executions are told the server is going away before their sockets close. A
 * Nomad that does not answer at the start is tried again until it does (GET /health says why
 * meanwhile), as Poseidon does; exit 2 when its event stream gives up (a refused token); 64 for a
 * configuration that cannot be used.
 */
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { Command } from 'commander';
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
import { envValue, nomadConfigFromEnv, type Env, type NomadConfig } from '../nomad/config.js';
import { createRunnerPools, type RunnerPoolsOptions } from '../runners/pools.js';
import { DRIVER_PREFERENCE, driverProfile, preferredDriver } from '../runners/drivers.js';
import { RUNNER_GROUP, RUNNER_TASK, type RunnerDriver, type RunnerNetwork } from '../runners/poseidonFormat.js';
import type { Job } from '../nomad/types.js';
import { isRetryable, readTemplateJobFile } from './templateJobFile.js';
import { registerSecret, withoutCredentials } from '../secrets.js';
import { createSupervisor } from '../supervisor/index.js';
import { paint } from '../supervisor/describe.js';
import { errorMessage } from '../errorMessage.js';
import { DEFAULT_LISTEN } from './commandLine/serve.js';
import { processIo, type CommandIo } from './commandIo.js';
import { EXIT_INTERNAL, EXIT_UNREACHABLE, EXIT_USAGE } from './exitCodes.js';
import { processLogger } from './logging.js';
import { watchMemory } from './memoryWatch.js';
import { packageRootOf, packageVersion } from './packageRoot.js';
import { PoseidonConfigError, readPoseidonConfiguration } from './poseidonConfiguration.js';
import { poseidonServeSettings, type PoseidonServeSettings } from './serveConfiguration.js';

/** Warden's own variable for the token, over Poseidon's (POSEIDON_SERVER_TOKEN, server.token). */
export const TOKEN_VARIABLE = 'WARDEN_SERVE_TOKEN';

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
  /** A Poseidon configuration file; undefined: ./configuration.yaml when there is one (not with --dev); false: none. */
  config?: string | false;
}

/**
 * What serve runs with: the options, where the command line gave none the Poseidon configuration's
 * (its variables over its file), and what only the configuration sets.
 */
export interface ServeConfiguration extends Omit<PoseidonServeSettings, 'listen' | 'tlsCert' | 'tlsKey' | 'poolAlertThreshold' | 'token'> {
  options: ServeOptions;
  /** The token, and where it came from (`variable` when a variable holds it, for the curl lines). */
  token?: { value: string; from: string; variable?: string };
  /** The configuration's file and variables read, for the start-up lines. */
  sources: string[];
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
export type ServeIo = CommandIo & { quiet?: QuietDriver; cwd?: string };

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

function realCluster(io: ServeIo, options: ServeOptions, nomad: Partial<NomadConfig>): Cluster {
  registerSecret(nomad.token);
  return {
    config: nomadConfigFromEnv(io.env, nomad),
    pools: options.setuser === undefined ? {} : { setuser: options.setuser },
    tty: options.tty !== false,
    notes: [],
    close: async () => undefined,
  };
}

/** The options with the Poseidon configuration under them; throws PoseidonConfigError for one that cannot be used. */
export function readServeConfiguration(options: ServeOptions, env: Env, cwd: string): ServeConfiguration {
  const poseidon = readPoseidonConfiguration({ file: options.config ?? (options.dev === true ? false : undefined), cwd, env });
  const { listen, tlsCert, tlsKey, poolAlertThreshold, token, templateJobFile, disableForcePull, networkMode, networkDnsServers, networkDnsSearches, networkDnsOptions, ...settings } =
    poseidonServeSettings(poseidon, { cwd, ...(options.dev === undefined ? {} : { dev: options.dev }) });
  const flagsTls = options.tlsCert !== undefined && options.tlsKey !== undefined;
  // The configuration's network is one setting: flags that give any part of it replace all of it.
  const flagsNetwork = [options.networkMode, options.networkDnsServers, options.networkDnsSearches, options.networkDnsOptions].some((part) => part !== undefined);
  const network = { networkMode, networkDnsServers, networkDnsSearches, networkDnsOptions };
  const merged: ServeOptions = {
    ...(flagsNetwork ? {} : Object.fromEntries(Object.entries(network).filter(([, part]) => part !== undefined))),
    ...(templateJobFile === undefined ? {} : { templateJobFile }),
    ...(disableForcePull === undefined ? {} : { disableForcePull }),
    ...options,
    ...(options.listen === undefined && listen !== undefined ? { listen } : {}),
    ...(!flagsTls && tlsCert !== undefined && tlsKey !== undefined ? { tlsCert, tlsKey } : {}),
    ...(options.poolAlertThreshold === undefined && poolAlertThreshold !== undefined ? { poolAlertThreshold } : {}),
  };
  const own = envValue(env, TOKEN_VARIABLE);
  const chosen = own !== undefined ? { value: own, from: TOKEN_VARIABLE } : token;
  return {
    ...settings,
    options: merged,
    ...(chosen === undefined ? {} : { token: { ...chosen, ...(/^[A-Z_]+$/.test(chosen.from) ? { variable: chosen.from } : {}) } }),
    sources: [...(poseidon.file === undefined ? [] : [poseidon.file]), ...poseidon.variables],
  };
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
function curlExample(base: string, driver: RunnerDriver, token: ServeConfiguration['token']): string[] {
  const auth = token === undefined ? '' : ` -H "Poseidon-Token: ${token.variable === undefined ? `<server.token of ${token.from.replace(/:\d+$/, '')}>` : `$${token.variable}`}"`;
  const image = driver === 'docker' ? 'openhpi/co_execenv_python:3.8' : 'local';
  const environment = JSON.stringify({ prewarmingPoolSize: 2, cpuLimit: 100, memoryLimit: 256, image, networkAccess: false, exposedPorts: [] });
  return [
    `curl -X PUT${auth} -H 'Content-Type: application/json' ${base}/execution-environments/1 -d '${environment}'`,
    `curl -X POST${auth} -H 'Content-Type: application/json' ${base}/runners -d '{"executionEnvironmentId":1,"inactivityTimeout":60}'`,
  ];
}

/** `warden serve` with these options (and the Poseidon configuration of io's environment and working directory); its exit code. */
export async function serve(options: ServeOptions, io: ServeIo): Promise<number> {
  let configuration: ServeConfiguration;
  try {
    configuration = readServeConfiguration(options, io.env, io.cwd ?? process.cwd());
  } catch (error) {
    if (!(error instanceof PoseidonConfigError)) throw error;
    (io.error ?? io.write)(`error: ${error.message}`);
    return EXIT_USAGE;
  }
  return serveConfigured(configuration, io);
}

/** `warden serve` with its configuration read; its exit code. */
export async function serveConfigured(configuration: ServeConfiguration, io: ServeIo): Promise<number> {
  const { options } = configuration;
  const clock = io.clock ?? systemClock;
  const style = { color: io.color ?? false };
  const fail = io.error ?? io.write;
  const token = configuration.token?.value;
  registerSecret(token);
  const tls = options.tlsCert === undefined || options.tlsKey === undefined ? undefined : { cert: readFileSync(options.tlsCert), key: readFileSync(options.tlsKey) };
  const cluster = options.dev === true ? await devCluster(io, options) : realCluster(io, options, configuration.nomad);
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
  const { memoryWatch } = configuration;
  const stopMemoryWatch = memoryWatch === undefined || io.logger === undefined ? undefined : watchMemory({ clock, ...memoryWatch, logger: io.logger });
  try {
    // Served at once: while Nomad does not answer, /health says why and the pools' routes answer 503.
    if (exitCode === 0 && io.signal?.aborted !== true) {
      apiMetrics.observe(pools);
      const api = new PoseidonApi({
        pools,
        clock,
        ...(token === undefined ? {} : { token }),
        environmentDefaults: { driver, ...(options.datacenters ? { datacenters: options.datacenters } : {}) },
        version: configuration.release ?? packageVersion(packageRootOf(process.argv[1] ?? '.')),
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
      if (configuration.sources.length > 0) io.write(`  configuration: Poseidon's, from ${configuration.sources.join(', ')}`);
      for (const note of configuration.notes) io.write(`    ${note}`);
      if (memoryWatch) io.write(`  memory: the heap read every ${memoryWatch.intervalMs} ms, a warning logged at ${memoryWatch.thresholdMb} MB (profiling.memoryinterval)`);
      io.write(`  metrics: ${server.url}/metrics${inspector ? `; inspector: ${inspector.url}` : ''}`);
      io.write(`  authentication: ${token === undefined ? `none (set ${TOKEN_VARIABLE} to require a Poseidon-Token)` : 'Poseidon-Token required'}`);
      io.write('Try it:');
      for (const line of curlExample(base, driver, configuration.token)) io.write(`  ${line}`);
      await finished;
    }
  } catch (error) {
    fail(`${paint('error', 'bad', style)} ${errorMessage(error)}`);
    exitCode = exitCode || EXIT_INTERNAL;
  } finally {
    stopMemoryWatch?.();
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

/** `warden serve` run from the command line (its options as commandLine/serve.ts parses them). */
export async function serveAction(parsed: Omit<ServeOptions, 'inspect' | 'datacenters'> & { datacenter?: string[]; inspect?: number | true }, command: Command): Promise<void> {
  // What the command line says, and only that: an option's default must not hide the configuration's value.
  const given = Object.fromEntries(Object.entries(parsed).filter(([name]) => command.getOptionValueSource(name) !== 'default')) as typeof parsed;
  const { inspect, datacenter, ...rest } = given;
  if ((rest.tlsCert === undefined) !== (rest.tlsKey === undefined)) command.error('--tls-cert and --tls-key go together', { exitCode: EXIT_USAGE });
  const options = { ...rest, ...(datacenter ? { datacenters: datacenter } : {}), ...(inspect === undefined ? {} : { inspect: inspect === true ? 0 : inspect }) };
  let configuration: ServeConfiguration;
  try {
    configuration = readServeConfiguration(options, process.env, process.cwd());
  } catch (error) {
    if (!(error instanceof PoseidonConfigError)) throw error;
    process.stderr.write(`error: ${error.message}\n`);
    process.exitCode = EXIT_USAGE;
    return;
  }
  const logger = processLogger(command, systemClock, { format: configuration.logFormat, level: configuration.logLevel });
  process.exitCode = await serveConfigured(configuration, { ...processIo(), logger });
}
