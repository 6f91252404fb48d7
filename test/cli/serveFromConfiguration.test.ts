/**
 * `warden serve` started from a Poseidon configuration file, as a Poseidon deployment has it: the
 * cluster (a FakeNomad that wants an ACL token), the port, the token, the pool alert, the release
 * and the memory watchdog all from the file, NOMAD_ADDR given way to it; reached as a client reaches
 * it, over loopback.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { main } from '../../src/cli/main.js';
import { serve } from '../../src/cli/serveCommand.js';
import { VirtualClock, settle } from '../../src/clock/index.js';
import type { LogFields } from '../../src/logger.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { closedPort } from './support/closedPort.js';

const START = Date.UTC(2026, 11, 1, 9);

let dir: string;
let fake: FakeNomad;
let clock: VirtualClock;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'warden-serve-from-config-'));
  clock = new VirtualClock({ start: START });
  fake = await FakeNomad.start({ clock, token: 'nomad-acl-token' });
});
afterEach(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Moves the clock until `done`, a bounded number of steps. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !done(); i++) {
    await settle(5);
    clock.advance(100);
  }
  if (!done()) throw new Error('not reached');
}

test("a Poseidon deployment's configuration.yaml, unchanged, serves Warden as it served Poseidon", async () => {
  const nomad = new URL(fake.address);
  writeFileSync(
    join(dir, 'configuration.yaml'),
    [
      'server:',
      '  address: 127.0.0.1',
      '  port: 0',
      '  token: poseidon-api-token',
      '  interactivestderr: true',
      '  alert:',
      '    prewarmingpoolthreshold: 0.5',
      '    prewarmingpoolreloadtimeout: 300',
      'nomad:',
      `  address: ${nomad.hostname}`,
      `  port: ${nomad.port}`,
      '  token: nomad-acl-token',
      '  namespace: default',
      'logger:',
      '  level: DEBUG',
      'profiling:',
      '  memoryinterval: 1_000',
      '  memorythreshold: 0',
      'sentry:',
      '  release: "2026.12.1"',
      '',
    ].join('\n'),
  );
  const lines: string[] = [];
  const errors: string[] = [];
  const warnings: { fields: LogFields; message: string }[] = [];
  const ignore = (): void => undefined;
  const logger = { debug: ignore, info: ignore, error: ignore, warn: (fields: LogFields, message: string) => void warnings.push({ fields, message }) };
  const stop = new AbortController();
  // NOMAD_ADDR names another cluster: the configuration's nomad.address wins, as in Poseidon.
  const env = { NOMAD_ADDR: `http://127.0.0.1:${await closedPort()}` };
  let exitCode: number | undefined;
  void serve({}, { env, cwd: dir, write: (line) => lines.push(line), error: (line) => errors.push(line), clock, signal: stop.signal, transport: { gzip: false }, logger }).then((code) => (exitCode = code));
  try {
    await until(() => lines.includes('Try it:') || exitCode !== undefined);
    expect(errors).toEqual([]);
    const output = lines.join('\n');
    expect(output).toContain(`cluster: ${fake.address}`);
    expect(output).toContain("configuration: Poseidon's, from configuration.yaml");
    expect(output).toContain('server.alert.prewarmingpoolreloadtimeout (configuration.yaml:8): no meaning for Warden');
    expect(output).toContain('memory: the heap read every 1000 ms, a warning logged at 0 MB (profiling.memoryinterval)');
    // The curl lines name where the token is, never the token.
    expect(output).toContain('-H "Poseidon-Token: <server.token of configuration.yaml>"');
    expect(output).not.toContain('poseidon-api-token');
    const api = /Poseidon's runner API at (http:\/\/127\.0\.0\.1:\d+\/api\/v1)/.exec(output)?.[1];
    expect(api).toBeDefined();

    const get = async (path: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> => {
      const response = await request(`${api}${path}`, { headers });
      return { status: response.statusCode, text: await response.body.text() };
    };
    expect(await get('/health')).toEqual({ status: 204, text: '' });
    // sentry.release is what /version answers, as in Poseidon.
    expect(await get('/version')).toEqual({ status: 200, text: '"2026.12.1"' });
    expect((await get('/statistics/execution-environments')).status).toBe(401);
    expect(await get('/statistics/execution-environments', { 'poseidon-token': 'poseidon-api-token' })).toEqual({ status: 200, text: '{}' });
    // The memory watchdog of profiling.*: a threshold of 0 MB is exceeded at once.
    expect(warnings).toContainEqual({ fields: expect.objectContaining({ thresholdMb: 0 }), message: 'Memory Threshold exceeded' });
  } finally {
    stop.abort('SIGTERM');
    await until(() => exitCode !== undefined);
  }
  expect(exitCode).toBe(0);
});

test('a configuration that cannot be used: exit 64, every problem on stderr, nothing started', async () => {
  writeFileSync(join(dir, 'configuration.yaml'), 'server:\n  prot: 7200\n  systemdsocketactivation: true\n');
  const errors: string[] = [];
  const lines: string[] = [];
  const code = await serve({}, { env: { NOMAD_ADDR: fake.address }, cwd: dir, write: (line) => lines.push(line), error: (line) => errors.push(line), clock });
  expect(code).toBe(64);
  expect(lines).toEqual([]);
  expect(errors).toEqual([
    "error: configuration.yaml:2: server.prot: not a key of Poseidon's configuration (did you mean port?)",
  ]);
  // The file's problems first; what Warden makes of it once it reads.
  writeFileSync(join(dir, 'configuration.yaml'), 'server:\n  systemdsocketactivation: true\n');
  errors.length = 0;
  expect(await serve({}, { env: { NOMAD_ADDR: fake.address }, cwd: dir, write: (line) => lines.push(line), error: (line) => errors.push(line), clock })).toBe(64);
  expect(errors).toEqual(['error: server.systemdsocketactivation (configuration.yaml:2): Warden listens on server.address:server.port itself; systemd socket activation is not supported']);
});

test('the command line: --config names the file, a missing one is a usage error (64) on stderr', async () => {
  const written: string[] = [];
  const stderr = jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => Boolean(written.push(String(chunk))));
  try {
    expect(await main(['node', 'warden', 'serve', '--config', join(dir, 'nowhere.yaml')])).toBeUndefined();
    expect(process.exitCode).toBe(64);
  } finally {
    stderr.mockRestore();
    process.exitCode = undefined;
  }
  expect(written.join('')).toBe(`error: ${join(dir, 'nowhere.yaml')}: no such configuration file\n`);
});
