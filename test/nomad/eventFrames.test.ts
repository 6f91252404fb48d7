import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeFrame, isAllocationEvent, isDeploymentEvent, isEvaluationEvent, isJobEvent } from '../../src/nomad/eventFrames.js';
import { NomadDecodeError } from '../../src/nomad/errors.js';

const scenario = join(__dirname, '..', 'fixtures', 'nomad-1.1.2', 'scenarios', 'rolling_update', 'stream.jsonl');
const raws = readFileSync(scenario, 'utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { raw: string }).raw);

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
    expect(frame?.skipped).toBe(0);
    expect(isAllocationEvent(frame!.Events[0]!)).toBe(false);
  });

  it('rejects lines that are not frames with a NomadDecodeError', () => {
    for (const line of ['Permission denied', '[1,2]', '{"Index":"5","Events":[]}', '{"Index":5,"Events":{}}', '{"Index":5']) {
      expect(() => decodeFrame(line)).toThrow(NomadDecodeError);
    }
  });

  it('skips and counts elements of Events that are not events, keeping their neighbours', () => {
    const good = '{"Topic":"Job","Type":"JobRegistered","Key":"web","Namespace":"default","FilterKeys":null,"Index":5,"Payload":{"Job":{"ID":"web"}}}';
    const frame = decodeFrame(`{"Index":5,"Events":[{"Topic":1},${good},null,"x",{"Topic":"Job","Index":5}]}`);
    expect(frame?.skipped).toBe(4);
    expect(frame?.Events.map((e) => e.Key)).toEqual(['web']);
  });

  it('does not take an allocation event without an allocation for one', () => {
    const frame = decodeFrame('{"Index":4,"Events":[{"Topic":"Allocation","Type":"X","Key":"a","Namespace":"default","FilterKeys":null,"Index":4,"Payload":{}}]}');
    expect(isAllocationEvent(frame!.Events[0]!)).toBe(false);
  });
});
