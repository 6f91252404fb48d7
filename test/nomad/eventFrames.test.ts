import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { decodeFrame, isAllocationEvent, isDeploymentEvent, isEvaluationEvent, isJobEvent, undecodableBatch, type SkippedEvent } from '../../src/nomad/eventFrames.js';
import { NomadDecodeError } from '../../src/nomad/errors.js';
import { parseNomadJson } from '../../src/nomad/json.js';
import { UnixNanos } from '../../src/nomad/unixNanos.js';

const scenarios = join(__dirname, '..', 'fixtures', 'nomad-1.1.2', 'scenarios');
const recorded = (name: string): string[] =>
  readFileSync(join(scenarios, name, 'stream.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { raw: string }).raw);
const raws = recorded('rolling_update');

describe('decodeFrame', () => {
  it('treats {} and an empty Index-0 object as heartbeats', () => {
    expect(decodeFrame('{}')).toBeNull();
    expect(decodeFrame('{"Index":0}')).toBeNull();
  });

  it('decodes every recorded line and classifies every event by topic', () => {
    const topics = new Map<string, number>();
    let frames = 0;
    for (const raw of raws) {
      const frame = decodeFrame(raw);
      if (frame === null) continue;
      frames++;
      for (const event of frame.Events) {
        const guards = [isAllocationEvent(event), isJobEvent(event), isEvaluationEvent(event), isDeploymentEvent(event)];
        expect(guards.filter(Boolean)).toHaveLength(1);
        topics.set(event.Topic, (topics.get(event.Topic) ?? 0) + 1);
      }
    }
    expect(frames).toBeGreaterThan(10);
    expect([...topics.keys()].sort()).toEqual(['Allocation', 'Deployment', 'Evaluation', 'Job']);
  });

  it('passes unknown topics through untouched', () => {
    const frame = decodeFrame('{"Index":9,"Events":[{"Topic":"Node","Type":"NodeStreamEvent","Key":"n1","Namespace":"","FilterKeys":null,"Index":9,"Payload":{"Node":{"ID":"n1"}}}]}');
    expect(frame?.Events[0]).toMatchObject({ Topic: 'Node', Payload: { Node: { ID: 'n1' } } });
    expect(frame?.skipped).toBeUndefined();
    expect(isAllocationEvent(frame!.Events[0]!)).toBe(false);
  });

  it('rejects lines that are not frames with a NomadDecodeError', () => {
    for (const line of ['Permission denied', '[1,2]', '{"Index":"5","Events":[]}', '{"Index":5,"Events":{}}', '{"Index":5']) {
      expect(() => decodeFrame(line)).toThrow(NomadDecodeError);
    }
  });

  it('skips an element nested 20,000 deep as an element, its excerpt written only as far as it is shown', () => {
    const frame = decodeFrame(`{"Events":[${'['.repeat(20_000)}${']'.repeat(20_000)}],"Index":77}`)!;
    expect(frame.Events).toEqual([]);
    expect(frame.skipped).toEqual({ index: 77, count: 1, examples: [{ index: 77, position: 0, reason: 'not an object', excerpt: '['.repeat(120) }] });
  });

  it('rejects a batch whose timestamps lie deeper than the walk goes with a NomadDecodeError that still names its batch', () => {
    // A Time 5,000 levels down in a payload, where the frame's own places are not: the full walk looks, and stops.
    const line = `{"Events":[{"Topic":"Node","Type":"X","Key":"n","Index":77,"Payload":{"Node":${'{"a":'.repeat(5_000)}{"Time":1795971902180095019}${'}'.repeat(5_000)}}}],"Index":77}`;
    let error: unknown;
    try {
      decodeFrame(line);
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(NomadDecodeError);
    expect(undecodableBatch(line, error as NomadDecodeError)).toEqual({
      index: 77,
      count: 1,
      examples: [{ index: 77, reason: 'undecodable JSON: RangeError: nested deeper than 1000 levels', excerpt: line.slice(0, 120) }],
    });
  });

  it('skips and counts elements of Events that are not events, keeping their neighbours', () => {
    const good = '{"Topic":"Job","Type":"JobRegistered","Key":"web","Namespace":"default","FilterKeys":null,"Index":5,"Payload":{"Job":{"ID":"web"}}}';
    const frame = decodeFrame(`{"Index":5,"Events":[{"Topic":1},${good},null,"x",{"Topic":"Job","Index":5}]}`);
    expect(frame?.skipped?.count).toBe(4);
    expect(frame?.Events.map((e) => e.Key)).toEqual(['web']);
    // Counted all, the first three kept as examples.
    expect(frame?.skipped?.examples.map((p) => [p.index, p.position, p.reason, p.excerpt])).toEqual([
      [5, 0, 'no Topic', 'null'],
      [5, 2, 'not an object', 'null'],
      [5, 3, 'not an object', '"x"'],
    ]);
  });

  it('counts 200,000 unusable events of one batch, keeping three examples and every usable neighbour', () => {
    const good = (i: number) => `{"Topic":"Job","Type":"JobRegistered","Key":"web-${i}","Namespace":"default","FilterKeys":null,"Index":5,"Payload":{"Job":{"ID":"web-${i}"}}}`;
    const bad = (i: number) => `{"Topic":"Allocation","Type":"AllocationUpdated","Key":"a-${i}","Index":5,"Payload":{}}`;
    const elements = Array.from({ length: 200_002 }, (_, i) => (i === 7 || i === 150_000 ? good(i) : bad(i)));
    const frame = decodeFrame(`{"Events":[${elements.join(',')}],"Index":5}`)!;
    expect(frame.Events.map((e) => e.Key)).toEqual(['web-7', 'web-150000']);
    expect(frame.skipped).toEqual({
      index: 5,
      count: 200_000,
      examples: [0, 1, 2].map((position) => ({
        index: 5,
        position,
        reason: 'Allocation event whose Payload has no Allocation with an ID',
        excerpt: `Allocation AllocationUpdated a-${position}: {}`,
      })),
    });
  });

  it('skips an event of a topic Warden reads whose Payload lacks that object, with the reason, keeping its neighbours', () => {
    const event = (topic: string, payload: string): string =>
      `{"Topic":"${topic}","Type":"X","Key":"k","Namespace":"default","FilterKeys":null,"Index":4,"Payload":${payload}}`;
    const bad = [
      event('Allocation', '{}'),
      event('Allocation', '{"Allocation":{"ID":"a","ModifyIndex":"4"}}'),
      event('Job', '{"Job":"web"}'),
      event('Evaluation', '{"Evaluation":{"ID":7}}'),
      event('Deployment', '[]'),
    ];
    const frame = decodeFrame(`{"Index":4,"Events":[${[...bad, event('Node', '{"Node":"n1"}'), event('Allocation', '{"Allocation":{"ID":"b","ModifyIndex":4}}')].join(',')}]}`)!;
    expect(frame.Events.map((e) => `${e.Topic}`)).toEqual(['Node', 'Allocation']);
    expect(isAllocationEvent(frame.Events[1]!)).toBe(true);
    expect(frame.skipped?.count).toBe(5);
    expect(frame.skipped?.examples.map((p) => [p.index, p.position])).toEqual([[4, 0], [4, 1], [4, 2]]);
    // Each alone, as the one example of its batch.
    const alone = bad.map((element) => decodeFrame(`{"Index":4,"Events":[${element}]}`)!.skipped!.examples[0]!);
    expect(alone.map((p) => p.reason)).toEqual([
      'Allocation event whose Payload has no Allocation with an ID',
      'Allocation event whose allocation has no numeric ModifyIndex',
      'Job event whose Payload has no Job with an ID',
      'Evaluation event whose Payload has no Evaluation with an ID',
      'Deployment event without a Payload object',
    ]);
    expect(alone.map((p) => p.excerpt)).toEqual([
      'Allocation X k: {}',
      'Allocation X k: {"Allocation":{"ID":"a","ModifyIndex":"4"}}',
      'Job X k: {"Job":"web"}',
      'Evaluation X k: {"Evaluation":{"ID":7}}',
      'Deployment X k: []',
    ]);
  });
});

describe('decodeFrame timestamps', () => {
  /** A frame of one allocation event whose Allocation object is `allocation` (JSON text). */
  const allocationFrame = (allocation: string): string =>
    `{"Events":[{"FilterKeys":null,"Index":9,"Key":"a1","Namespace":"default","Payload":{"Allocation":${allocation}},"Topic":"Allocation","Type":"AllocationUpdated"}],"Index":9}`;
  const taskState = (...times: string[]): string => `{"Events":[${times.map((t) => `{"Time":${t},"Type":"Started"}`).join(',')}],"State":"running"}`;
  // Two different times that JSON.parse rounds to the same double: only text order tells them apart.
  const [early, late] = ['1795971902180095019', '1795971902180095023'];
  const exact = (digits: string): UnixNanos => UnixNanos.fromBigInt(BigInt(digits));

  it('are exact on every recorded line: the same frame as the full parse', () => {
    let lines = 0;
    for (const name of readdirSync(scenarios)) {
      for (const raw of recorded(name)) {
        const full = parseNomadJson(raw) as { Events?: unknown[] };
        const frame = decodeFrame(raw);
        if (frame !== null) expect(frame.Events).toEqual(full.Events);
        lines++;
      }
    }
    expect(lines).toBeGreaterThan(100);
  });

  it('are exact where Nomad puts them: allocation, its job, reschedule and task events, other payloads', () => {
    const line = `{"Events":[${[
      `{"Topic":"Allocation","Type":"X","Key":"a","Namespace":"","FilterKeys":null,"Index":3,"Payload":{"Allocation":{"CreateTime":${early},"ID":"a","Job":{"SubmitTime":${late}},"ModifyIndex":3,"ModifyTime":${late},"RescheduleTracker":{"Events":[{"RescheduleTime":${early}}]},"TaskStates":{"main":${taskState(early, late)}}}}}`,
      `{"Topic":"Evaluation","Type":"X","Key":"e","Namespace":"","FilterKeys":null,"Index":3,"Payload":{"Evaluation":{"CreateTime":${late},"ID":"e","ModifyTime":${early}}}}`,
      `{"Topic":"Job","Type":"X","Key":"j","Namespace":"","FilterKeys":null,"Index":3,"Payload":{"Job":{"ID":"j","SubmitTime":${early}}}}`,
    ].join(',')}],"Index":3}`;
    expect(decodeFrame(line)?.Events.map((e) => e.Payload)).toEqual([
      {
        Allocation: {
          CreateTime: exact(early),
          ID: 'a',
          Job: { SubmitTime: exact(late) },
          ModifyIndex: 3,
          ModifyTime: exact(late),
          RescheduleTracker: { Events: [{ RescheduleTime: exact(early) }] },
          TaskStates: { main: { Events: [{ Time: exact(early), Type: 'Started' }, { Time: exact(late), Type: 'Started' }], State: 'running' } },
        },
      },
      { Evaluation: { CreateTime: exact(late), ID: 'e', ModifyTime: exact(early) } },
      { Job: { ID: 'j', SubmitTime: exact(early) } },
    ]);
  });

  it('are exact in keys out of sorted order (Go struct order), integer-like task names and unknown places', () => {
    const lines = [
      allocationFrame(`{"ID":"a1","TaskStates":{"main":${taskState(early)}},"ModifyIndex":9,"CreateTime":${late},"ModifyTime":${late}}`),
      allocationFrame(`{"ID":"a1","ModifyIndex":9,"TaskStates":{"b":${taskState(late)},"10":${taskState(early)}}}`),
      allocationFrame(`{"ID":"a1","ModifyIndex":9,"Metrics":{"Sample":{"CreateTime":${late}}},"TaskStates":{"main":${taskState(early)}}}`),
    ];
    const [structOrder, integerTasks, elsewhere] = lines.map((line) => decodeFrame(line)!.Events[0]!.Payload.Allocation as Record<string, unknown>);
    expect(structOrder).toMatchObject({ CreateTime: exact(late), ModifyTime: exact(late), TaskStates: { main: { Events: [{ Time: exact(early) }] } } });
    expect(integerTasks).toMatchObject({ TaskStates: { b: { Events: [{ Time: exact(late) }] }, 10: { Events: [{ Time: exact(early) }] } } });
    expect(elsewhere).toMatchObject({ Metrics: { Sample: { CreateTime: exact(late) } }, TaskStates: { main: { Events: [{ Time: exact(early) }] } } });
  });
});

describe('undecodableBatch: the index of a batch line that does not decode, only when Nomad\'s own form names it', () => {
  const refused = (line: string): NomadDecodeError => {
    try {
      decodeFrame(line);
    } catch (error) {
      if (error instanceof NomadDecodeError) return error;
      throw error;
    }
    throw new Error(`decoded: ${line}`);
  };
  const skip = (line: string) => undecodableBatch(line, refused(line));
  const good = raws.find((raw) => raw.length > 2_000)!;
  const index = (JSON.parse(good) as { Index: number }).Index;

  it('recovers N from a corrupt recorded batch, with the JSON error and the text around it', () => {
    const at = Math.floor(good.length / 2);
    const corrupt = `${good.slice(0, at)}\u0000garbage${good.slice(at)}`;
    const { count, examples } = skip(corrupt)!;
    expect(count).toBe(1);
    const [skipped] = examples as [SkippedEvent];
    expect(skipped).toMatchObject({ index, reason: expect.stringMatching(/^malformed JSON/) });
    expect(skipped.position).toBeUndefined();
    expect(skipped.excerpt.length).toBeLessThanOrEqual(120);
    expect(skipped.excerpt).toContain('garbage');
  });

  it('recovers N from a line that parses but is no frame', () => {
    expect(skip('{"Events":null,"Index":12}')).toMatchObject({ index: 12, count: 1, examples: [{ index: 12, reason: 'event stream frame without an Events list' }] });
    expect(skip('{"Events":{"a":1},"Index":9007199254740991}')?.index).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('names no batch for raw error text, a line cut short, another shape, or an index that is not a plain safe integer', () => {
    for (const line of [
      'rpc error: EOF',
      'subscription closed by server, client should resubscribe',
      good.slice(0, good.length - 10),
      `${good.slice(0, -1)}`,
      '{"Index":5,"Events":[{]}',
      '{"Events":[{]}],"Index":05}',
      '{"Events":[{]}],"Index":-5}',
      '{"Events":[{]}],"Index":5.0}',
      '{"Events":[{]}],"Index":9007199254740993}',
      '{"Events":[{]}],"Index":"5"}',
      '{"Events":[{]}],"Index":5} ',
    ]) {
      expect(skip(line)).toBeUndefined();
    }
  });
});
