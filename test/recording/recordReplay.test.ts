/**
 * Record and replay: `warden record` over a FakeNomad playing a real Nomad's recording (with a cut
 * stream, so the recording holds a reconnect and its listing), then `warden replay` of that file on a
 * fresh VirtualClock: the same state changes and verdicts at the same times, every time, with no
 * server at all. Tokens are never written. A deploy gate records and replays the same way.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gate, replayGate } from '../../src/cli/gateCommand.js';
import { replay } from '../../src/cli/recordCommands.js';
import { withRecording, type RecordedCommand } from '../../src/cli/recording.js';
import { watch } from '../../src/cli/watchCommand.js';
import { VirtualClock } from '../../src/clock/index.js';
import { driveReplay } from '../../src/nomad/recording/drive.js';
import { parseTrafficRecording, TrafficRecordingError } from '../../src/nomad/recording/format.js';
import { TrafficRecorder } from '../../src/nomad/recording/recorder.js';
import { ReplayWire } from '../../src/nomad/recording/replayWire.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { liveScenarios, scenarioDir } from '../health/support/replayScenario.js';
import { driveTo, flush, loadScenario, requestedIndex, splitAfterRegistration, stripNomadVerdict } from '../supervisor/support/harness.js';

const TOKEN = 'rec-token-5b1e-secret';
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'warden-recording-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Live {
  lines: string[];
  code: number;
}

/** A command run live against a FakeNomad replaying `name`, recorded to `file`. */
async function recordLive(name: string, file: string, command: RecordedCommand, options: { cutAfterEvents?: number } = {}): Promise<Live> {
  const scenario = loadScenario(name);
  // The job exists when the command starts (a gate reads it first); the rest plays while it runs.
  const [before, after] = splitAfterRegistration(scenario.stream);
  const clock = new VirtualClock({ start: scenario.opened + before.at(-1)!.t });
  const fake = await FakeNomad.start({ clock, token: TOKEN });
  fake.replay(before, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario), immediate: true });
  if (options.cutAfterEvents !== undefined) fake.faults.stream({ cutAfterEvents: options.cutAfterEvents }, 1);
  const lines: string[] = [];
  const stop = new AbortController();
  const io = { env: { NOMAD_ADDR: fake.address, NOMAD_TOKEN: TOKEN }, write: (l: string) => lines.push(l), clock, transport: { gzip: false }, signal: stop.signal };
  const running = withRecording(file, command, io, (recordingIo) =>
    command.name === 'gate' ? gate(command.options.jobId, command.options, recordingIo) : watch({ ...command.options, json: true }, recordingIo),
  );
  let code: number | undefined;
  void running.then((c) => (code = c));
  await flush();
  fake.replay(after, { transform: stripNomadVerdict });
  while (code === undefined && clock.now() < scenario.closed + 1_000) await driveTo(clock, Math.min(scenario.closed + 1_000, clock.now() + 1_000));
  stop.abort();
  const result = { lines, code: await running };
  await fake.close();
  return result;
}

async function replayed(file: string, speed?: number): Promise<Live> {
  const lines: string[] = [];
  const code = await replay(file, { json: true, ...(speed === undefined ? {} : { speed }) }, { env: {}, write: (l) => lines.push(l) });
  return { lines, code };
}

/** The judging in a watch's JSON lines: state changes and verdicts, with their times and reasons. */
const judging = (lines: readonly string[]): string[] => lines.filter((line) => /"type":"(state|verdict)"/.test(line));

describe('warden record, then warden replay', () => {
  test('a rolling update with a cut stream replays to the same changes and verdicts, with no server and no token in the file', async () => {
    const file = join(dir, 'rolling.ndjson');
    const live = await recordLive('rolling_update', file, { name: 'watch', options: {} }, { cutAfterEvents: 12 });
    const verdicts = live.lines.filter((line) => line.includes('"type":"verdict"'));
    expect(verdicts.length).toBeGreaterThanOrEqual(3);
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain(TOKEN);
    expect(text.toLowerCase()).not.toContain('x-nomad-token');
    const recording = parseTrafficRecording(text);
    expect(recording.header.command).toEqual({ name: 'watch', options: {} });
    expect(Object.keys(recording.header.env)).toEqual(['NOMAD_ADDR']);
    // Two event stream connections (the cut), each with its chunks, and the listings.
    const streams = recording.entries.filter((e) => e.type === 'response' && e.path.startsWith('/v1/event/stream'));
    expect(streams.length).toBeGreaterThanOrEqual(2);
    expect(recording.entries.some((e) => e.type === 'chunk')).toBe(true);
    expect(recording.entries.some((e) => e.type === 'response' && e.path.startsWith('/v1/allocations'))).toBe(true);

    const first = await replayed(file);
    expect(first.code).toBe(live.code);
    expect(judging(first.lines)).toEqual(judging(live.lines));
    expect(first.lines).toEqual(live.lines);
    const second = await replayed(file);
    expect(second.lines).toEqual(first.lines);
  });

  test('a failed task replays to the same verdict; --speed paces the same steps', async () => {
    const file = join(dir, 'failed.ndjson');
    const live = await recordLive('failed_task', file, { name: 'watch', options: {} });
    expect(judging(live.lines).some((line) => line.includes('"verdict":"unhealthy"'))).toBe(true);
    const fast = await replayed(file);
    expect(fast.lines).toEqual(live.lines);
    // The recording is short; 10,000× its pace still waits on the real clock between steps.
    const paced = await replayed(file, 10_000);
    expect(paced.lines).toEqual(fast.lines);
  });
});

describe('warden gate --record, then --replay', () => {
  const gateLine = (lines: readonly string[]): unknown => JSON.parse(lines.at(-1) ?? '{}');

  test('a rolling update gate gives the same result and exit code over its recording', async () => {
    const scenario = loadScenario('rolling_update');
    const file = join(dir, 'gate.ndjson');
    const jobId = scenario.meta.job_id;
    const live = await recordLive('rolling_update', file, { name: 'gate', options: { jobId, json: true, version: 1 } });
    expect(gateLine(live.lines)).toEqual(expect.objectContaining({ type: 'deployment', ok: true }));
    const lines: string[] = [];
    const code = await replayGate(file, jobId, { json: true, version: 1 }, { env: {}, write: (l) => lines.push(l) });
    expect([code, gateLine(lines)]).toEqual([live.code, gateLine(live.lines)]);
    const again = await replayed(file);
    expect([again.code, gateLine(again.lines)]).toEqual([live.code, gateLine(live.lines)]);
  });

  test('a fail-fast gate on a failed task gives the same reasons and exit code over its recording', async () => {
    const scenario = loadScenario('failed_task');
    const file = join(dir, 'failed-gate.ndjson');
    const live = await recordLive('failed_task', file, { name: 'gate', options: { jobId: scenario.meta.job_id, json: true, failFast: true } });
    expect(gateLine(live.lines)).toEqual(expect.objectContaining({ ok: false }));
    const lines: string[] = [];
    const code = await replayGate(file, scenario.meta.job_id, { json: true, failFast: true }, { env: {}, write: (l) => lines.push(l) });
    expect([code, gateLine(lines)]).toEqual([live.code, gateLine(live.lines)]);
  });

  test("over a watch's recording that never read the job, the gate says what the recording lacks instead of waiting", async () => {
    const scenario = loadScenario('failed_task');
    const file = join(dir, 'watched.ndjson');
    await recordLive('failed_task', file, { name: 'watch', options: {} });
    const lines: string[] = [];
    const errors: string[] = [];
    const code = await replayGate(file, scenario.meta.job_id, { json: true }, { env: {}, write: (l) => lines.push(l), error: (l) => errors.push(l) });
    expect(code).toBe(2);
    // stdout stays one JSON object a line; what the recording lacked is said on stderr.
    expect(lines.map((line) => JSON.parse(line) as unknown)).toHaveLength(lines.length);
    expect(errors.join('\n')).toContain(`the recording has no answer to GET /v1/job/${scenario.meta.job_id}`);
    expect(errors.at(-1)).toMatch(/^note 2 request\(s\) had no answer in the recording \(first: GET http:\/\/[^ ]+\/v1\/event\/stream\?namespace=default&index=0&topic=Job%3Afailed-task/);
  });
});

describe('the recorder and the replay wire', () => {
  const request = (path: string, signal = new AbortController().signal) => ({ origin: 'http://127.0.0.1:4646', method: 'GET' as const, path, headers: { 'x-nomad-token': TOKEN }, body: null, signal });

  test('a character cut between two chunks is noted whole, tokens are replaced, request headers never written; the replay gives the same bytes', async () => {
    const clock = new VirtualClock({ start: 1_000 });
    const lines: string[] = [];
    const recorder = new TrafficRecorder({ clock, command: { name: 'watch', options: {} }, env: {}, write: (line) => lines.push(line), secrets: [TOKEN] });
    const euro = Buffer.from('{"Name":"€"}\n');
    const network = {
      send: async (sent: { path: string }) => {
        if (sent.path.includes('down')) throw new Error(`refused for ${TOKEN}`);
        return { statusCode: 200, headers: { 'x-nomad-index': '7', 'set-cookie': ['x'] }, text: async () => `body ${TOKEN}`, chunks: async function* () {
          yield euro.subarray(0, 10);
          clock.advance(5);
          yield euro.subarray(10);
        } };
      },
      close: async () => undefined,
    };
    const wire = recorder.layer(network);
    const streamed: Buffer[] = [];
    for await (const chunk of (await wire.send(request('/v1/event/stream?index=1'))).chunks()) streamed.push(Buffer.from(chunk));
    expect(await (await wire.send(request(`/v1/job/x?note=${TOKEN}`))).text()).toBe(`body ${TOKEN}`);
    await expect(wire.send(request('/down'))).rejects.toThrow();
    recorder.stop();
    const text = lines.join('');
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain('set-cookie');
    const recording = parseTrafficRecording(text);
    expect(recording.entries.filter((e) => e.type === 'chunk').map((e) => (e as { text: string }).text)).toEqual(['{"Name":"', '€"}\n']);

    const replayClock = new VirtualClock({ start: 1_000 });
    const replayWire = new ReplayWire(recording, replayClock);
    const replayedChunks: Buffer[] = [];
    const reading = (async () => {
      for await (const chunk of (await replayWire.send(request('/v1/event/stream?index=1'))).chunks()) replayedChunks.push(Buffer.from(chunk));
    })();
    await driveReplay(replayClock, recording.endsAt);
    await reading;
    expect(Buffer.concat(replayedChunks)).toEqual(Buffer.concat(streamed));
    expect(replayClock.now()).toBe(1_005);
    await expect(replayWire.send(request('/down'))).rejects.toThrow('refused for [redacted]');
    await expect(replayWire.send(request('/v1/other'))).rejects.toThrow('the recording has no answer to GET /v1/other');
    expect(replayWire.misses).toEqual(['GET http://127.0.0.1:4646/v1/other']);
    // Past the recording's end, the same refusal, but what a stopping command asks then is no gap in it.
    replayClock.advanceTo(recording.endsAt + 1);
    await expect(replayWire.send(request('/v1/later'))).rejects.toThrow('the recording has no answer to GET /v1/later');
    expect(replayWire.misses).toEqual(['GET http://127.0.0.1:4646/v1/other']);
  });
});

describe('the recording file', () => {
  const header = { format: 'warden-recording', version: 1, start: 0, command: { name: 'watch', options: {} }, env: {} };

  test('a file that is not a recording, or of another version, is refused with the reason', () => {
    expect(() => parseTrafficRecording('{"t":0}\n')).toThrow(TrafficRecordingError);
    expect(() => parseTrafficRecording(`${JSON.stringify({ ...header, version: 2 })}\n`)).toThrow(/version 2/);
    expect(() => parseTrafficRecording(`${JSON.stringify(header)}\n{"t":1,"type":"chunk"}\n`)).toThrow(/line 2/);
  });

  test('a recording cut off mid-line (the recorder was killed) keeps what came before; it ends at its last step', () => {
    const text = `${JSON.stringify(header)}\n{"t":5,"id":1,"type":"chunk","text":"{}\\n"}\n{"t":9,"id":1,"type":"chu`;
    const recording = parseTrafficRecording(text);
    expect(recording.entries).toHaveLength(1);
    expect(recording.endsAt).toBe(5);
  });

  test('replaying a file that is not a recording fails before anything runs', async () => {
    const file = join(dir, 'not-a-recording.ndjson');
    writeFileSync(file, 'hello\n');
    await expect(replayed(file)).rejects.toThrow(TrafficRecordingError);
  });
});

describe("the live tier's recordings (test/fixtures/nomad-1.1.2-live)", () => {
  test.each(liveScenarios())('%s: warden replay of the real agent\'s traffic prints what the watch printed live', async (name) => {
    const dir = scenarioDir(name);
    const printed = readFileSync(join(dir, 'watch.jsonl'), 'utf8').split('\n').filter((line) => line !== '');
    const again = await replayed(join(dir, 'recording.ndjson'));
    expect(judging(again.lines)).toEqual(judging(printed));
    expect(judging(printed).some((line) => line.includes('"type":"verdict"'))).toBe(true);
  });
});
