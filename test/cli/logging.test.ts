/** Structured logs: pino passed to the supervisor as it is, the command line's JSON and pretty forms, no token ever. */
import { pino } from 'pino';
import type { Command } from 'commander';
import { createCliLogger, processLogger, prettyRecord } from '../../src/cli/logging.js';
import { buildProgram } from '../../src/cli/main.js';
import { watch } from '../../src/cli/watchCommand.js';
import { VirtualClock } from '../../src/clock/index.js';
import { createSupervisor } from '../../src/supervisor/index.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { driveTo, flush, loadScenario, requestedIndex, stripNomadVerdict } from '../supervisor/support/harness.js';

const TOKEN = 'tok-3f9a-secret';

describe('a pino logger passed to createSupervisor as it is', () => {
  test('keeps every field as a field, and never writes the token', async () => {
    const scenario = loadScenario('failed_task');
    const clock = new VirtualClock({ start: scenario.opened });
    const fake = await FakeNomad.start({ clock, token: TOKEN });
    const lines: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(line) });
    const supervisor = createSupervisor({ nomad: { address: fake.address, token: TOKEN }, clock, logger });
    try {
      fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
      await driveTo(clock, scenario.opened + 5_000);
      const records = lines.map((line) => JSON.parse(line) as { level: number; msg: string; index?: number });
      const connected = records.find((record) => record.msg === 'event stream connected');
      expect(connected).toEqual(expect.objectContaining({ level: 30, index: expect.any(Number) }));
      expect(lines.join('')).not.toContain(TOKEN);
    } finally {
      await supervisor.stop();
      await fake.close();
    }
  });
});

describe('the command line logger', () => {
  const clock = new VirtualClock({ start: Date.UTC(2026, 0, 2, 3, 4, 5, 678) });

  test('json: one object a line, the level by name, the time from the command clock, tokens removed', () => {
    const lines: string[] = [];
    const logger = createCliLogger({ format: 'json', level: 'info', clock, write: (line) => lines.push(line), secrets: [TOKEN] });
    logger.debug('not at info');
    logger.warn('lost connection', { reason: `403 for ${TOKEN}`, attempt: 2 });
    logger.info({ url: 'http://127.0.0.1:9' }, 'metrics served');
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[0]!)).toEqual(
      expect.objectContaining({ level: 'warn', time: '2026-01-02T03:04:05.678Z', msg: 'lost connection', reason: '403 for [redacted]', attempt: 2 }),
    );
    expect(JSON.parse(lines[1]!)).toEqual(expect.objectContaining({ level: 'info', msg: 'metrics served', url: 'http://127.0.0.1:9' }));
  });

  test('pretty: time, level, message and key=value fields on one line', () => {
    const lines: string[] = [];
    const logger = createCliLogger({ format: 'pretty', level: 'debug', clock, write: (line) => lines.push(line) });
    logger.debug('allocation not judged', { allocId: 'c13982a7', reason: 'health_check = "manual"' });
    expect(lines).toEqual(['2026-01-02T03:04:05.678Z DEBUG allocation not judged allocId=c13982a7 reason="health_check = \\"manual\\""\n']);
    expect(prettyRecord('{"level":"warn","time":"t","msg":"m","n":1}', { color: true })).toContain('\u001b[31mWARN \u001b[39m');
  });

  test('silent writes nothing', () => {
    const lines: string[] = [];
    createCliLogger({ format: 'json', level: 'silent', clock, write: (line) => lines.push(line) }).error('x');
    expect(lines).toEqual([]);
  });
});

describe('warden watch with the command line logger', () => {
  test('logs the stream connection as JSON on its logger, never the token, and its output stays on stdout', async () => {
    const scenario = loadScenario('failed_task');
    const clock = new VirtualClock({ start: scenario.opened });
    const fake = await FakeNomad.start({ clock, token: TOKEN });
    const logs: string[] = [];
    const output: string[] = [];
    const logger = createCliLogger({ format: 'json', level: 'debug', clock, write: (line) => logs.push(line), secrets: [TOKEN] });
    const stop = new AbortController();
    const env = { NOMAD_ADDR: fake.address, NOMAD_TOKEN: TOKEN };
    const running = watch({}, { env, write: (l) => output.push(l), clock, transport: { gzip: false }, signal: stop.signal, logger });
    await flush();
    fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
    await driveTo(clock, scenario.closed + 1_000);
    stop.abort();
    expect(await running).toBe(0);
    await fake.close();
    const records = logs.map((line) => JSON.parse(line) as { msg: string; level: string });
    expect(records).toContainEqual(expect.objectContaining({ level: 'info', msg: 'event stream connected' }));
    expect(output.some((line) => line.includes('unhealthy'))).toBe(true);
    expect([...logs, ...output].join('\n')).not.toContain(TOKEN);
  });
});

test("a configuration's logger level and format apply where --log-level and --log-format are not given", async () => {
  const logged = async (globals: string[], fallback: Parameters<typeof processLogger>[2]): Promise<string> => {
    const program = buildProgram('0.0.0');
    let command: Command | undefined;
    program.commands.find((candidate) => candidate.name() === 'serve')!.action((_options: unknown, self: Command) => void (command = self));
    await program.parseAsync(['node', 'warden', ...globals, 'serve']);
    const written: string[] = [];
    const stderr = jest.spyOn(process.stderr, 'write').mockImplementation((text) => written.push(String(text)) > 0);
    try {
      const logger = processLogger(command!, new VirtualClock(), fallback);
      logger.debug('a debug record');
      logger.info('an info record');
    } finally {
      stderr.mockRestore();
    }
    return written.join('');
  };
  const fromConfiguration = await logged([], { level: 'debug', format: 'json' });
  expect(fromConfiguration.trim().split('\n').map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual(['a debug record', 'an info record']);
  const fromFlags = await logged(['--log-level', 'info', '--log-format', 'pretty'], { level: 'debug', format: 'json' });
  expect(fromFlags).not.toContain('a debug record');
  expect(fromFlags).toMatch(/ INFO {2}an info record\n$/);
});
