/**
 * What `warden serve` makes of a Poseidon configuration: every key applied, accepted with a plain
 * note that it means nothing to Warden, or refused in one error naming each; and the precedence of
 * the command line over POSEIDON_* variables over the file (over NOMAD_* for the cluster).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PoseidonConfigError, readPoseidonConfiguration } from '../../src/cli/poseidonConfiguration.js';
import { readServeConfiguration } from '../../src/cli/serveCommand.js';
import { poseidonServeSettings, type PoseidonServeSettings } from '../../src/cli/serveConfiguration.js';

const EXAMPLE = join(__dirname, '..', 'fixtures', 'poseidon', 'configuration.example.yaml');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'warden-serve-config-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function settingsOf(yaml: string, env: Record<string, string> = {}, dev?: boolean): PoseidonServeSettings {
  writeFileSync(join(dir, 'configuration.yaml'), yaml);
  return poseidonServeSettings(readPoseidonConfiguration({ cwd: dir, env }), { cwd: dir, ...(dev === undefined ? {} : { dev }) });
}

function refused(yaml: string, env: Record<string, string> = {}, dev?: boolean): readonly string[] {
  try {
    settingsOf(yaml, env, dev);
  } catch (error) {
    if (error instanceof PoseidonConfigError) return error.problems;
    throw error;
  }
  throw new Error('nothing refused');
}

test("Poseidon's own example configuration, unchanged: every key applied or noted", () => {
  const settings = settingsOf(readFileSync(EXAMPLE, 'utf8'));
  expect(settings).toEqual({
    disableForcePull: true,
    networkMode: 'cni/secure-bridge',
    listen: { host: '127.0.0.1', port: 7200 },
    poolAlertThreshold: 0.5,
    nomad: { address: 'http://127.0.0.1:4646' },
    logLevel: 'debug',
    memoryWatch: { intervalMs: 30_000, thresholdMb: 1_000 },
    notes: [
      "server.alert.prewarmingpoolreloadtimeout (configuration.yaml:42): no meaning for Warden: Poseidon reloads an environment whose pool stays below the alert threshold this long; Warden's pools replace missing runners as they go and have nothing to reload",
      'profiling.cpufile (configuration.yaml:99): no effect without profiling.cpuenabled, as in Poseidon',
    ],
  });
});

test('each key Warden cannot honour is refused with its reason, all in one error', () => {
  const yaml = [
    'server:',
    '  systemdsocketactivation: true',
    '  interactivestderr: false',
    '  templatejobfile: ./poseidon.hcl',
    '  tls:',
    '    active: true',
    '  alert:',
    '    prewarmingpoolthreshold: 1.5',
    'nomad:',
    '  enabled: false',
    '  disableforcepull: false',
    '  network:',
    '    device: eth1',
    'aws:',
    '  enabled: true',
    'profiling:',
    '  cpuenabled: true',
    'logger:',
    '  level: verbose',
    '  formatter: logfmt',
    'sentry:',
    '  dsn: https://key@sentry.example/1',
    'influxdb:',
    '  url: http://localhost:8086',
    '',
  ].join('\n');
  expect(refused(yaml)).toEqual([
    'server.systemdsocketactivation (configuration.yaml:2): Warden listens on server.address:server.port itself; systemd socket activation is not supported',
    "server.interactivestderr (configuration.yaml:3): Warden always sends an interactive execution's stderr apart from its stdout (Poseidon's true); merging them is not supported",
    'nomad.enabled (configuration.yaml:10): Warden runs runners on Nomad only',
    'aws.enabled (configuration.yaml:15): Warden has no AWS Lambda executor',
    'profiling.cpuenabled (configuration.yaml:17): Warden writes no CPU profile of its own; run it with NODE_OPTIONS=--cpu-prof for one',
    'sentry.dsn (configuration.yaml:22): Warden does not report to Sentry: its errors are in its log (--log-format json for a shipper) and its problems counted at /metrics',
    'influxdb.url (configuration.yaml:24): Warden sends no monitoring data to InfluxDB: it serves Prometheus metrics at /metrics',
    "nomad.network.device (configuration.yaml:13): not supported: Warden sets only the mode and DNS of the network of runners with network access (their ports are the environment's exposedPorts)",
    'server.tls.active (configuration.yaml:6): needs server.tls.certfile and server.tls.keyfile',
    `server.templatejobfile (configuration.yaml:4): no such file: ${join(dir, 'poseidon.hcl')}`,
    'server.alert.prewarmingpoolthreshold (configuration.yaml:8): expected a fraction in [0, 1), e.g. 0.5',
    'logger.level (configuration.yaml:19): expected one of trace, debug, info, warn, warning, error, fatal, panic (logrus\'s levels)',
    'logger.formatter (configuration.yaml:20): expected TextFormatter or JSONFormatter',
  ]);
});

test("the values Warden behaves as anyway pass without a word; keys that do nothing alone say so, as they do nothing in Poseidon", () => {
  const settings = settingsOf(
    [
      'server:',
      '  systemdsocketactivation: false',
      '  interactivestderr: true',
      '  templatejobfile: ""',
      '  tls:',
      '    certfile: ./poseidon.crt',
      '    cafile: ./ca.crt',
      '  loggingfiltertoken: monitoring-filter',
      'nomad:',
      '  enabled: true',
      '  disableforcepull: true',
      '  network:',
      '    mode: bridge',
      '  tls:',
      '    cafile: ./nomad-ca.crt',
      'aws:',
      '  enabled: false',
      '  functions: [java11Exec]',
      'sentry:',
      '  environment: staging',
      'influxdb:',
      '  bucket: poseidon',
      '',
    ].join('\n'),
  );
  expect(settings.notes).toEqual([
    "server.tls.cafile (configuration.yaml:7): no meaning for Warden: Poseidon uses it only for its systemd watchdog's requests to itself; Warden has no watchdog",
    'server.loggingfiltertoken (configuration.yaml:8): no meaning for Warden: Poseidon keeps requests carrying it in their User-Agent out of its log; Warden logs requests only at debug level, and none is filtered',
    'server.tls.certfile (configuration.yaml:6): no effect without server.tls.active, as in Poseidon',
    'nomad.tls.cafile (configuration.yaml:15): no effect without nomad.tls.active, as in Poseidon',
    'aws.functions (configuration.yaml:18): no effect without aws.enabled, as in Poseidon',
    'sentry.environment (configuration.yaml:20): no effect without sentry.dsn, as in Poseidon',
    'influxdb.bucket (configuration.yaml:22): no effect without influxdb.url, as in Poseidon',
  ]);
  expect(settings).toMatchObject({ nomad: {} });
  expect(settings.listen).toBeUndefined();
});

test('server, nomad, logger and sentry keys become the options that do the same', () => {
  writeFileSync(join(dir, 'ca.pem'), 'CA PEM');
  writeFileSync(join(dir, 'client.pem'), 'CLIENT PEM');
  writeFileSync(join(dir, 'client-key.pem'), 'KEY PEM');
  writeFileSync(join(dir, 'server.crt'), 'SERVER CERT');
  writeFileSync(join(dir, 'server.key'), 'SERVER KEY');
  const settings = settingsOf(
    [
      'server:',
      '  address: 0.0.0.0',
      '  port: 7300',
      '  token: s3cret-token',
      '  tls: { active: true, certfile: ./server.crt, keyfile: ./server.key }',
      'nomad:',
      '  address: "::1"',
      '  port: 4747',
      '  token: nomad-acl-token',
      '  namespace: poseidon',
      '  tls: { active: true, cafile: ca.pem, certfile: client.pem, keyfile: client-key.pem }',
      'logger: { level: Warning, formatter: JSONFormatter }',
      'sentry: { release: "2026.12" }',
      '',
    ].join('\n'),
  );
  expect(settings).toEqual({
    listen: { host: '0.0.0.0', port: 7300 },
    token: { value: 's3cret-token', from: 'configuration.yaml:4' },
    tlsCert: join(dir, 'server.crt'),
    tlsKey: join(dir, 'server.key'),
    nomad: { address: 'https://[::1]:4747', token: 'nomad-acl-token', namespace: 'poseidon', tls: { ca: ['CA PEM'], cert: 'CLIENT PEM', key: 'KEY PEM' } },
    logLevel: 'warn',
    logFormat: 'json',
    release: '2026.12',
    notes: [],
  });
  // Poseidon's defaults fill the rest of an address one key names.
  expect(settingsOf('nomad:\n  tls:\n    active: true\n').nomad).toEqual({ address: 'https://127.0.0.1:4646' });
  expect(settingsOf('server:\n  port: 0\n').listen).toEqual({ host: '127.0.0.1', port: 0 });
  expect(settingsOf('logger:\n  level: trace\n')).toMatchObject({ logLevel: 'debug', notes: ['logger.level (configuration.yaml:2): Warden has no level trace: it logs at debug, its nearest'] });
  expect(refused('nomad:\n  tls: { active: true, cafile: missing.pem }\n')).toEqual([expect.stringMatching(/^nomad\.tls\.cafile \(configuration\.yaml:2\): cannot read .*missing\.pem: ENOENT/)]);
  expect(refused('nomad:\n  port: 70000\n')).toEqual(['nomad.port (configuration.yaml:2): expected a port number (0-65535)']);
  expect(refused('server:\n  tls: { active: true, certfile: gone.crt, keyfile: server.key }\n')).toEqual([`server.tls.certfile (configuration.yaml:2): no such file: ${join(dir, 'gone.crt')}`]);
});

test("a template job file, the runners' network and force pulls: Poseidon's keys as the serve options", () => {
  writeFileSync(join(dir, 'poseidon.hcl'), 'job "template-0" {}');
  const yaml = [
    'server:',
    '  templatejobfile: ./poseidon.hcl',
    'nomad:',
    '  disableforcepull: true',
    '  network:',
    '    mode: cni/secure-bridge',
    '    dns: { servers: [10.0.0.2], searches: [example.org], options: [ndots:2] }',
    '',
  ].join('\n');
  const applied = {
    templateJobFile: join(dir, 'poseidon.hcl'),
    disableForcePull: true,
    networkMode: 'cni/secure-bridge',
    networkDnsServers: ['10.0.0.2'],
    networkDnsSearches: ['example.org'],
    networkDnsOptions: ['ndots:2'],
  };
  expect(settingsOf(yaml)).toEqual({ ...applied, nomad: {}, notes: [] });
  writeFileSync(join(dir, 'configuration.yaml'), yaml);
  expect(readServeConfiguration({}, {}, dir).options).toEqual(applied);
  // The network is one setting: a flag naming any part of it replaces the configuration's whole.
  expect(readServeConfiguration({ networkMode: 'bridge' }, {}, dir).options).toEqual({ templateJobFile: join(dir, 'poseidon.hcl'), disableForcePull: true, networkMode: 'bridge' });
});

test('--dev runs its own cluster: a configuration that names one is refused', () => {
  expect(refused('nomad:\n  address: nomad.example\n  token: t0ken-value\n', {}, true)).toEqual([
    'nomad.address (configuration.yaml:2): --dev runs its own embedded cluster',
    'nomad.token (configuration.yaml:3): --dev runs its own embedded cluster',
  ]);
  expect(settingsOf('server:\n  port: 0\n', {}, true).listen).toEqual({ host: '127.0.0.1', port: 0 });
});

describe('precedence: the command line, then POSEIDON_* variables, then the file; the cluster of NOMAD_* where the configuration names none', () => {
  const file = ['server:', '  port: 4000', '  token: from-the-file', '  alert:', '    prewarmingpoolthreshold: 0.5', 'nomad:', '  port: 4747', ''].join('\n');
  beforeEach(() => writeFileSync(join(dir, 'configuration.yaml'), file));

  test('the file alone', () => {
    const configuration = readServeConfiguration({}, { NOMAD_ADDR: 'http://nomad.example:4646' }, dir);
    expect(configuration.options).toEqual({ listen: { host: '127.0.0.1', port: 4000 }, poolAlertThreshold: 0.5 });
    expect(configuration.token).toEqual({ value: 'from-the-file', from: 'configuration.yaml:3' });
    // nomad.port names the cluster (on Poseidon's default host): NOMAD_ADDR gives way.
    expect(configuration.nomad).toEqual({ address: 'http://127.0.0.1:4747' });
    expect(configuration.sources).toEqual(['configuration.yaml']);
  });

  test('variables over the file, and WARDEN_SERVE_TOKEN over both', () => {
    const env = { POSEIDON_SERVER_PORT: '5000', POSEIDON_SERVER_TOKEN: 'from-the-variable' };
    const configuration = readServeConfiguration({}, env, dir);
    expect(configuration.options.listen).toEqual({ host: '127.0.0.1', port: 5000 });
    expect(configuration.token).toEqual({ value: 'from-the-variable', from: 'POSEIDON_SERVER_TOKEN', variable: 'POSEIDON_SERVER_TOKEN' });
    expect(configuration.sources).toEqual(['configuration.yaml', 'POSEIDON_SERVER_PORT', 'POSEIDON_SERVER_TOKEN']);
    expect(readServeConfiguration({}, { ...env, WARDEN_SERVE_TOKEN: 'wardens-own' }, dir).token).toEqual({ value: 'wardens-own', from: 'WARDEN_SERVE_TOKEN', variable: 'WARDEN_SERVE_TOKEN' });
  });

  test('options over both', () => {
    const configuration = readServeConfiguration({ listen: { host: '127.0.0.1', port: 0 }, poolAlertThreshold: 0.1, tlsCert: 'a.crt', tlsKey: 'a.key' }, { POSEIDON_SERVER_PORT: '5000' }, dir);
    expect(configuration.options).toEqual({ listen: { host: '127.0.0.1', port: 0 }, poolAlertThreshold: 0.1, tlsCert: 'a.crt', tlsKey: 'a.key' });
  });

  test('--no-config reads no file (variables still apply); --dev reads none unless named', () => {
    expect(readServeConfiguration({ config: false }, { POSEIDON_SERVER_PORT: '5000' }, dir)).toMatchObject({ options: { config: false, listen: { port: 5000 } }, sources: ['POSEIDON_SERVER_PORT'], nomad: {} });
    expect(readServeConfiguration({ dev: true }, {}, dir)).toMatchObject({ options: { dev: true }, sources: [], nomad: {} });
    expect(readServeConfiguration({ config: 'configuration.yaml' }, {}, dir).sources).toEqual(['configuration.yaml']);
  });
});
