/**
 * What `warden serve` makes of a Poseidon configuration (poseidonConfiguration.ts): each key set is
 * applied to the serve option that does the same, accepted with a note saying plainly that it means
 * nothing to Warden (and why), or refused, with every refused key in one error. A key set to the value
 * Warden behaves as anyway (`aws.enabled: false`) asks for nothing and passes without a word.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { LogLevel } from '../logger.js';
import type { ListenAddress } from '../metrics/server.js';
import { NomadConfigError, readConfigFile, type NomadConfig, type NomadTlsOptions } from '../nomad/config.js';
import type { LogFormat } from './logOptions.js';
import { PoseidonConfigError, type ConfigValue, type PoseidonConfiguration, type Setting } from './poseidonConfiguration.js';

/** Poseidon's defaults where a key sets part of an address. */
const POSEIDON_SERVER = { address: '127.0.0.1', port: 7200 };
const POSEIDON_NOMAD = { address: '127.0.0.1', port: 4646 };

export interface PoseidonServeSettings {
  listen?: ListenAddress;
  /** server.token, and where it was set. */
  token?: { value: string; from: string };
  /** server.tls.certfile / keyfile (when server.tls.active), resolved against the working directory. */
  tlsCert?: string;
  tlsKey?: string;
  poolAlertThreshold?: number;
  /** The cluster, where the configuration names it (over NOMAD_*). */
  nomad: Partial<NomadConfig>;
  logLevel?: LogLevel;
  logFormat?: LogFormat;
  /** sentry.release: what GET /version answers, as in Poseidon. */
  release?: string;
  /** profiling.memoryinterval / memorythreshold: Poseidon's memory watchdog. */
  memoryWatch?: { intervalMs: number; thresholdMb: number };
  /** server.templatejobfile, resolved against the working directory. */
  templateJobFile?: string;
  /** nomad.disableforcepull. */
  disableForcePull?: boolean;
  /** nomad.network's mode and DNS (its other fields are refused). */
  networkMode?: string;
  networkDnsServers?: string[];
  networkDnsSearches?: string[];
  networkDnsOptions?: string[];
  /** Lines for the operator: keys accepted that mean nothing to Warden, and why. */
  notes: string[];
}

/** Keys Warden honours at one value only, the one it behaves as: any other is refused, with the reason. */
const FIXED: readonly { path: string; accepted: ConfigValue; reason: string }[] = [
  { path: 'server.systemdsocketactivation', accepted: false, reason: 'Warden listens on server.address:server.port itself; systemd socket activation is not supported' },
  { path: 'server.interactivestderr', accepted: true, reason: "Warden always sends an interactive execution's stderr apart from its stdout (Poseidon's true); merging them is not supported" },
  { path: 'nomad.enabled', accepted: true, reason: 'Warden runs runners on Nomad only' },
  { path: 'aws.enabled', accepted: false, reason: 'Warden has no AWS Lambda executor' },
  { path: 'profiling.cpuenabled', accepted: false, reason: 'Warden writes no CPU profile of its own; run it with NODE_OPTIONS=--cpu-prof for one' },
  { path: 'sentry.dsn', accepted: '', reason: 'Warden does not report to Sentry: its errors are in its log (--log-format json for a shipper) and its problems counted at /metrics' },
  { path: 'influxdb.url', accepted: '', reason: 'Warden sends no monitoring data to InfluxDB: it serves Prometheus metrics at /metrics' },
];

/** Keys that ask for something Warden has no counterpart of, because what they serve does not arise in it. */
const WITHOUT_MEANING: Readonly<Record<string, { unset: ConfigValue; reason: string }>> = {
  'server.tls.cafile': { unset: '', reason: "Poseidon uses it only for its systemd watchdog's requests to itself; Warden has no watchdog" },
  'server.loggingfiltertoken': { unset: '', reason: "Poseidon keeps requests carrying it in their User-Agent out of its log; Warden logs requests only at debug level, and none is filtered" },
  'server.alert.prewarmingpoolreloadtimeout': {
    unset: 0,
    reason: "Poseidon reloads an environment whose pool stays below the alert threshold this long; Warden's pools replace missing runners as they go and have nothing to reload",
  },
};

/** Keys that do nothing unless another is set, in Poseidon as here: said so when set alone. */
const DEPENDENT: readonly { prefix: string; on: string; except?: readonly string[] }[] = [
  { prefix: 'aws.', on: 'aws.enabled', except: ['aws.enabled'] },
  { prefix: 'profiling.cpufile', on: 'profiling.cpuenabled' },
  { prefix: 'profiling.memorythreshold', on: 'profiling.memoryinterval' },
  { prefix: 'sentry.', on: 'sentry.dsn', except: ['sentry.dsn', 'sentry.release'] },
  { prefix: 'influxdb.', on: 'influxdb.url', except: ['influxdb.url'] },
  { prefix: 'nomad.tls.', on: 'nomad.tls.active', except: ['nomad.tls.active'] },
  { prefix: 'server.tls.certfile', on: 'server.tls.active' },
  { prefix: 'server.tls.keyfile', on: 'server.tls.active' },
];

/** logrus's levels (ParseLevel, any case) as Warden's: the nearest it has, and whether that is the same. */
const LOG_LEVELS: Readonly<Record<string, [LogLevel, boolean]>> = {
  trace: ['debug', false],
  debug: ['debug', true],
  info: ['info', true],
  warn: ['warn', true],
  warning: ['warn', true],
  error: ['error', true],
  fatal: ['error', false],
  panic: ['error', false],
};

const LOG_FORMATS: Readonly<Record<string, LogFormat>> = { TextFormatter: 'pretty', JSONFormatter: 'json' };

/** nomad.network's keys Warden applies, by the serve option they set. */
const NETWORK_KEYS: Readonly<Record<string, 'networkMode' | 'networkDnsServers' | 'networkDnsSearches' | 'networkDnsOptions'>> = {
  'nomad.network.mode': 'networkMode',
  'nomad.network.dns.servers': 'networkDnsServers',
  'nomad.network.dns.searches': 'networkDnsSearches',
  'nomad.network.dns.options': 'networkDnsOptions',
};

/** Cluster keys: a configuration that names the cluster, which --dev cannot use. */
export const CLUSTER_KEYS = ['nomad.address', 'nomad.port', 'nomad.token', 'nomad.namespace', 'nomad.tls.active', 'nomad.tls.cafile', 'nomad.tls.certfile', 'nomad.tls.keyfile'];

const asked = (value: ConfigValue): boolean => value !== '' && value !== 0 && value !== false && !(Array.isArray(value) && value.length === 0);

/** The serve settings of a Poseidon configuration; throws PoseidonConfigError naming every key refused. */
export function poseidonServeSettings(configuration: PoseidonConfiguration, options: { cwd: string; dev?: boolean }): PoseidonServeSettings {
  const { settings } = configuration;
  const problems: string[] = [];
  const notes: string[] = [];
  const named = (path: string, setting: Setting): string => `${path} (${setting.from})`;
  const refuse = (path: string, reason: string): void => void problems.push(`${named(path, settings.get(path)!)}: ${reason}`);
  const note = (path: string, reason: string): void => void notes.push(`${named(path, settings.get(path)!)}: ${reason}`);
  const value = <T extends ConfigValue>(path: string): T | undefined => settings.get(path)?.value as T | undefined;

  for (const { path, accepted, reason } of FIXED) if (settings.has(path) && value(path) !== accepted) refuse(path, reason);
  for (const [path, { unset, reason }] of Object.entries(WITHOUT_MEANING)) if (settings.has(path) && value(path) !== unset) note(path, `no meaning for Warden: ${reason}`);
  for (const [path, setting] of settings) {
    const rule = DEPENDENT.find((candidate) => path.startsWith(candidate.prefix) && !candidate.except?.includes(path));
    if (rule !== undefined && asked(setting.value) && !asked(value(rule.on) ?? false)) note(path, `no effect without ${rule.on}, as in Poseidon`);
  }
  // The network's mode and DNS are the runners' (NETWORK_KEYS); Warden sets no device, address, bandwidth or ports of its own.
  for (const [path, setting] of settings) {
    if (!path.startsWith('nomad.network.') || !asked(setting.value) || path in NETWORK_KEYS) continue;
    refuse(path, 'not supported: Warden sets only the mode and DNS of the network of runners with network access (their ports are the environment\'s exposedPorts)');
  }
  if (options.dev === true) for (const path of CLUSTER_KEYS) if (settings.has(path)) refuse(path, '--dev runs its own embedded cluster');

  const result: PoseidonServeSettings = { nomad: {}, notes };
  const file = (path: string): string => resolve(options.cwd, value<string>(path)!);

  if (settings.has('server.address') || settings.has('server.port')) {
    const port = value<number>('server.port') ?? POSEIDON_SERVER.port;
    if (port < 0 || port > 65_535) refuse('server.port', 'expected a port number (0-65535)');
    result.listen = { host: value<string>('server.address') || POSEIDON_SERVER.address, port };
  }
  const token = settings.get('server.token');
  if (token !== undefined && token.value !== '') result.token = { value: String(token.value), from: token.from };
  if (value('server.tls.active') === true) {
    if (!asked(value('server.tls.certfile') ?? '') || !asked(value('server.tls.keyfile') ?? '')) refuse('server.tls.active', 'needs server.tls.certfile and server.tls.keyfile');
    else {
      for (const path of ['server.tls.certfile', 'server.tls.keyfile']) if (!existsSync(file(path))) refuse(path, `no such file: ${file(path)}`);
      [result.tlsCert, result.tlsKey] = [file('server.tls.certfile'), file('server.tls.keyfile')];
    }
  }
  if (asked(value('server.templatejobfile') ?? '')) {
    if (existsSync(file('server.templatejobfile'))) result.templateJobFile = file('server.templatejobfile');
    else refuse('server.templatejobfile', `no such file: ${file('server.templatejobfile')}`);
  }
  if (value('nomad.disableforcepull') === true) result.disableForcePull = true;
  for (const [path, option] of Object.entries(NETWORK_KEYS)) {
    const set = value(path);
    if (set === undefined || !asked(set)) continue;
    if (option === 'networkMode') result.networkMode = String(set);
    else result[option] = [...(set as readonly string[])];
  }
  const threshold = value<number>('server.alert.prewarmingpoolthreshold');
  if (threshold !== undefined) {
    if (threshold >= 0 && threshold < 1) result.poolAlertThreshold = threshold;
    else refuse('server.alert.prewarmingpoolthreshold', 'expected a fraction in [0, 1), e.g. 0.5');
  }

  const tls = value('nomad.tls.active') === true;
  if (settings.has('nomad.address') || settings.has('nomad.port') || settings.has('nomad.tls.active')) {
    const host = value<string>('nomad.address') || POSEIDON_NOMAD.address;
    const port = value<number>('nomad.port') ?? POSEIDON_NOMAD.port;
    const address = `${tls ? 'https' : 'http'}://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
    if (port < 0 || port > 65_535) refuse('nomad.port', 'expected a port number (0-65535)');
    else if (!URL.canParse(address)) refuse('nomad.address', `makes no valid address: ${address}`);
    else result.nomad.address = address;
  }
  if (asked(value('nomad.token') ?? '')) result.nomad.token = value<string>('nomad.token')!;
  if (asked(value('nomad.namespace') ?? '')) result.nomad.namespace = value<string>('nomad.namespace')!;
  if (tls) {
    const pem: NomadTlsOptions = {};
    const read = (path: string): string | undefined => {
      try {
        return readConfigFile(file(path), path, (message) => new NomadConfigError(message));
      } catch (error) {
        refuse(path, (error as Error).message.replace(`${path}: `, ''));
        return undefined;
      }
    };
    if (asked(value('nomad.tls.cafile') ?? '')) pem.ca = [read('nomad.tls.cafile') ?? ''];
    const [cert, key] = ['nomad.tls.certfile', 'nomad.tls.keyfile'].map((path) => asked(value(path) ?? ''));
    if (cert !== key) refuse(cert ? 'nomad.tls.certfile' : 'nomad.tls.keyfile', 'nomad.tls.certfile and nomad.tls.keyfile go together');
    else if (cert) [pem.cert, pem.key] = [read('nomad.tls.certfile'), read('nomad.tls.keyfile')];
    if (Object.keys(pem).length > 0) result.nomad.tls = pem;
  }

  const level = value<string>('logger.level');
  if (level !== undefined) {
    const mapped = LOG_LEVELS[level.toLowerCase()];
    if (mapped === undefined) refuse('logger.level', `expected one of ${Object.keys(LOG_LEVELS).join(', ')} (logrus's levels)`);
    else {
      result.logLevel = mapped[0];
      if (!mapped[1]) note('logger.level', `Warden has no level ${level.toLowerCase()}: it logs at ${mapped[0]}, its nearest`);
    }
  }
  const formatter = value<string>('logger.formatter');
  if (formatter !== undefined) {
    if (LOG_FORMATS[formatter] === undefined) refuse('logger.formatter', `expected ${Object.keys(LOG_FORMATS).join(' or ')}`);
    else result.logFormat = LOG_FORMATS[formatter];
  }
  if (asked(value('sentry.release') ?? '')) result.release = value<string>('sentry.release')!;
  const interval = value<number>('profiling.memoryinterval') ?? 0;
  if (interval > 0) result.memoryWatch = { intervalMs: interval, thresholdMb: value<number>('profiling.memorythreshold') ?? 1_000 };

  if (problems.length > 0) throw new PoseidonConfigError(problems);
  return result;
}
