import { join } from 'node:path';
import {
  RecordingFormatError,
  isHeartbeatLine,
  listScenarios,
  parseStreamRecording,
  readApiExchanges,
  readScenario,
} from '../../src/testing/recording.js';
import { parseLossless, stringifyLossless } from '../../src/testing/losslessJson.js';

const FIXTURES = join(__dirname, '..', 'fixtures', 'nomad-1.1.2');

describe('recording reader', () => {
  it('reads every scenario with its stream, job and meta', () => {
    const names = listScenarios(join(FIXTURES, 'scenarios'));
    expect(names).toContain('healthy_task_states');
    for (const name of names) {
      const scenario = readScenario(join(FIXTURES, 'scenarios', name));
      expect(scenario.name).toBe(name);
      expect(isHeartbeatLine(scenario.stream[0]!)).toBe(true);
      expect(scenario.stream.every((line, i) => i === 0 || line.t >= scenario.stream[i - 1]!.t)).toBe(true);
      expect((scenario.job as { ID: string }).ID).toBe(scenario.meta.job_id);
    }
  });

  it('keeps nanosecond timestamps exact', () => {
    const scenario = readScenario(join(FIXTURES, 'scenarios', 'healthy_task_states'));
    const submit = (scenario.job as { SubmitTime: unknown }).SubmitTime;
    expect(typeof submit).toBe('bigint');
    expect(scenario.jobText).toContain(String(submit));
    expect(parseLossless(stringifyLossless(scenario.job))).toEqual(scenario.job);
  });

  it('reads the api exchanges', () => {
    const exchanges = readApiExchanges(join(FIXTURES, 'api'));
    expect(exchanges.map((e) => e.name)).toContain('get_allocation_404');
    expect(exchanges.find((e) => e.name === 'get_job_404')!.response.body).toBe('job not found');
  });

  it('refuses malformed lines with a typed error', () => {
    expect(() => parseStreamRecording('{"t":1,"raw":"{}"}\nnot json\n')).toThrow(RecordingFormatError);
    expect(() => parseStreamRecording('{"t":"1","raw":"{}"}')).toThrow(/numeric "t"/);
  });
});

describe('lossless JSON', () => {
  it('round-trips integers beyond 2^53 and leaves the rest alone', () => {
    const text = '{"a":1795971902180095019,"b":-9007199254740993,"c":1.5e+300,"d":0.4855302676968023,"e":"1795971902180095019","f":[1,2]}';
    const value = parseLossless(text) as Record<string, unknown>;
    expect(value.a).toBe(1795971902180095019n);
    expect(value.b).toBe(-9007199254740993n);
    expect(value.c).toBe(1.5e300);
    expect(value.d).toBe(0.4855302676968023);
    expect(value.e).toBe('1795971902180095019');
    expect(stringifyLossless(value)).toBe(text);
  });
});
