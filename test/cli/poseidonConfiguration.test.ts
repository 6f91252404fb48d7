/**
 * Poseidon's configuration read as Poseidon reads it (internal/config/config.go): its file, its
 * POSEIDON_* variables over the file, its keys and types, and every problem named at once.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PoseidonConfigError, POSEIDON_SCHEMA, readPoseidonConfiguration, variableOf, type PoseidonConfiguration } from '../../src/cli/poseidonConfiguration.js';
import { scrubSecrets } from '../../src/secrets.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'warden-poseidon-config-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function read(yaml: string | undefined, env: Record<string, string> = {}, file?: string | false): PoseidonConfiguration {
  if (yaml !== undefined) writeFileSync(join(dir, 'configuration.yaml'), yaml);
  return readPoseidonConfiguration({ cwd: dir, env, ...(file === undefined ? {} : { file }) });
}

function values(configuration: PoseidonConfiguration): Record<string, unknown> {
  return Object.fromEntries([...configuration.settings].map(([path, setting]) => [path, setting.value]));
}

function problems(run: () => unknown): readonly string[] {
  try {
    run();
  } catch (error) {
    if (error instanceof PoseidonConfigError) return error.problems;
    throw error;
  }
  throw new Error('no PoseidonConfigError');
}

test("./configuration.yaml of the working directory is read when there is one, as Poseidon's default; none is no configuration", () => {
  expect(read(undefined)).toEqual({ variables: [], settings: new Map() });
  const configuration = read('server:\n  port: 4000\n');
  expect(configuration.file).toBe('configuration.yaml');
  expect(configuration.settings.get('server.port')).toEqual({ value: 4000, from: 'configuration.yaml:2' });
});

test('--config names the file (relative to the working directory); a missing one is an error, not the defaults Poseidon falls back to', () => {
  writeFileSync(join(dir, 'poseidon.yaml'), 'nomad:\n  namespace: poseidon\n');
  writeFileSync(join(dir, 'configuration.yaml'), 'server:\n  port: 1\n');
  expect(values(read(undefined, {}, 'poseidon.yaml'))).toEqual({ 'nomad.namespace': 'poseidon' });
  expect(problems(() => read(undefined, {}, 'gone.yaml'))).toEqual(['gone.yaml: no such configuration file']);
  // --no-config: no file, not even the default one.
  expect(values(read(undefined, {}, false))).toEqual({});
});

test('values as go-yaml decodes them into the fields: YAML 1.1 numbers and booleans, plain scalars as written where a string is expected', () => {
  const yaml = [
    'server:',
    '  address: 0.0.0.0',
    '  token: 0123', // an octal integer in YAML 1.1, a string field: the text as written
    '  interactivestderr: yes',
    '  alert:',
    '    prewarmingpoolthreshold: 0.5',
    '    prewarmingpoolreloadtimeout: 300',
    'nomad:',
    '  namespace: no', // a boolean in YAML 1.1, a string field
    '  port: 4_646',
    '  tls:',
    '    active: off',
    '    cafile: "./ca.crt"',
    '  network:',
    '    dns:',
    '      servers: [1.1.1.1, 8.8.8.8]',
    'aws:',
    '  functions:',
    '    - java11Exec',
    'profiling:',
    '  memoryinterval: 30_000',
    'logger:',
    '  level: DEBUG',
    'sentry:',
    '  token:', // not a key: an error even without a value
    'influxdb:', // a section without keys: nothing set
    '',
  ].join('\n');
  expect(problems(() => read(yaml))).toEqual(["configuration.yaml:25: sentry.token: not a key of Poseidon's configuration"]);
  expect(values(read(yaml.replace('  token:\n', '  release: r1\n')))).toEqual({
    'server.address': '0.0.0.0',
    'server.token': '0123',
    'server.interactivestderr': true,
    'server.alert.prewarmingpoolthreshold': 0.5,
    'server.alert.prewarmingpoolreloadtimeout': 300,
    'nomad.namespace': 'no',
    'nomad.port': 4646,
    'nomad.tls.active': false,
    'nomad.tls.cafile': './ca.crt',
    'nomad.network.dns.servers': ['1.1.1.1', '8.8.8.8'],
    'aws.functions': ['java11Exec'],
    'profiling.memoryinterval': 30_000,
    'logger.level': 'DEBUG',
    'sentry.release': 'r1',
  });
});

test('a key with no value (or ~) keeps its default, as in Poseidon', () => {
  expect(values(read('server:\n  token:\n  port: ~\n  tls:\nnomad: ~\n'))).toEqual({});
});

test('every problem at once, each naming the key, its line and what was expected', () => {
  const yaml = ['Server:', '  port: 1', 'server:', '  prot: 7200', '  port: seventy', '  systemdsocketactivation: 1', '  alert: 0.5', 'nomad:', '  port: -1.5', 'aws:', '  functions: java11Exec', 'profiling:', '  memoryinterval: -5', ''].join('\n');
  expect(problems(() => read(yaml))).toEqual([
    "configuration.yaml:1: Server: not a key of Poseidon's configuration (did you mean server?)",
    "configuration.yaml:4: server.prot: not a key of Poseidon's configuration (did you mean port?)",
    'configuration.yaml:5: server.port: expected an integer, got "seventy"',
    'configuration.yaml:6: server.systemdsocketactivation: expected true or false, got 1',
    'configuration.yaml:7: server.alert: expected a mapping of keys',
    'configuration.yaml:9: nomad.port: expected an integer, got -1.5',
    'configuration.yaml:11: aws.functions: expected a list of strings, got "java11Exec"',
    'configuration.yaml:13: profiling.memoryinterval: expected a non-negative integer, got -5',
  ]);
});

test('YAML that does not parse, and duplicate keys, are errors with their line', () => {
  expect(problems(() => read('server:\n  port: [7200\n'))[0]).toMatch(/^configuration\.yaml:\d: not valid YAML: /);
  expect(problems(() => read('server:\n  port: 1\n  port: 2\n'))).toEqual([expect.stringMatching(/^configuration\.yaml:3: not valid YAML: Map keys must be unique/)]);
});

test('POSEIDON_* variables over the file, named as Poseidon names them; blank is unset', () => {
  const configuration = read('server:\n  port: 4000\n  address: 0.0.0.0\n', {
    POSEIDON_SERVER_PORT: '5000',
    POSEIDON_SERVER_ADDRESS: '   ',
    POSEIDON_NOMAD_TLS_ACTIVE: 'T',
    POSEIDON_AWS_FUNCTIONS: '"java11Exec go118Exec"',
    POSEIDON_SERVER_ALERT_PREWARMINGPOOLTHRESHOLD: '0.25',
    POSEIDON_NOMAD_NETWORK_DNS_SEARCHES: 'a.example b.example',
    PATH: '/bin',
  });
  expect(configuration.variables).toEqual(['POSEIDON_AWS_FUNCTIONS', 'POSEIDON_NOMAD_NETWORK_DNS_SEARCHES', 'POSEIDON_NOMAD_TLS_ACTIVE', 'POSEIDON_SERVER_ALERT_PREWARMINGPOOLTHRESHOLD', 'POSEIDON_SERVER_PORT']);
  expect(configuration.settings.get('server.port')).toEqual({ value: 5000, from: 'POSEIDON_SERVER_PORT' });
  expect(values(configuration)).toEqual({
    'server.port': 5000,
    'server.address': '0.0.0.0',
    'nomad.tls.active': true,
    'aws.functions': ['java11Exec', 'go118Exec'],
    // Poseidon reads no float from a variable (it warns and ignores it); Warden does.
    'server.alert.prewarmingpoolthreshold': 0.25,
    'nomad.network.dns.searches': ['a.example', 'b.example'],
  });
});

test('a variable Poseidon would ignore with a warning is an error naming it', () => {
  expect(
    problems(() =>
      read(undefined, {
        POSEIDON_SERVER_PORT: '72OO',
        POSEIDON_SERVER_PROT: '7200',
        POSEIDON_NOMAD_DISABLEFORCEPULL: 'yes', // strconv.ParseBool refuses it
        POSEIDON_PROFILING_MEMORYTHRESHOLD: '-1',
        POSEIDON_NOMAD_NETWORK_RESERVEDPORTS: '80',
        POSEIDON_NOMAD: 'x',
      }),
    ),
  ).toEqual([
    'POSEIDON_NOMAD: not a variable of Poseidon\'s configuration',
    'POSEIDON_NOMAD_DISABLEFORCEPULL: expected true or false, got "yes"',
    'POSEIDON_NOMAD_NETWORK_RESERVEDPORTS: nomad.network.reservedports cannot be set from a variable (in Poseidon neither); set it in the file',
    'POSEIDON_PROFILING_MEMORYTHRESHOLD: expected a non-negative integer, got "-1"',
    'POSEIDON_SERVER_PORT: expected an integer, got "72OO"',
    'POSEIDON_SERVER_PROT: not a variable of Poseidon\'s configuration (did you mean POSEIDON_SERVER_PORT?)',
  ]);
});

test("every key's variable is Poseidon's POSEIDON_ and its path upper-cased (its Go fields' names)", () => {
  expect(variableOf('server.tls.cafile')).toBe('POSEIDON_SERVER_TLS_CAFILE');
  expect(variableOf('server.alert.prewarmingpoolreloadtimeout')).toBe('POSEIDON_SERVER_ALERT_PREWARMINGPOOLRELOADTIMEOUT');
  expect(Object.keys(POSEIDON_SCHEMA)).toEqual(['server', 'nomad', 'aws', 'logger', 'profiling', 'sentry', 'influxdb']);
});

test('tokens are secrets: registered for scrubbing, never quoted in a problem', () => {
  read('server:\n  token: file-token-1234\n', { POSEIDON_NOMAD_TOKEN: 'variable-token-5678' });
  expect(scrubSecrets('file-token-1234 variable-token-5678')).toBe('[redacted] [redacted]');
  expect(problems(() => read('influxdb:\n  token: [not, a, string]\n'))).toEqual(['configuration.yaml:2: influxdb.token: expected a string, got a value of another type']);
});
