/**
 * A payload that does not parse is reported with its index and skipped; the supervisor keeps
 * running. FakeNomad replays a recording with one batch line corrupted (or one event of a batch
 * emptied), kept in its event buffer as a Nomad that sent it would; the whole supervisor follows
 * over loopback on a VirtualClock.
 */
import type { LogFields, LogSink } from '../../src/logger.js';
import { parseLossless, stringifyLossless } from '../../src/testing/losslessJson.js';
import type { LineRewrite } from '../../src/testing/nomad/replay.js';
import { replayScenario } from '../health/support/replayScenario.js';
import { serviceJob } from '../testing/helpers.js';
import { driveTo, loadScenario, requestedIndex, startHarness, stripNomadVerdict } from './support/harness.js';

interface Warning {
  message: string;
  fields: LogFields | undefined;
}

async function follow(name: string, rewriteLine: LineRewrite) {
  const scenario = loadScenario(name);
  const warnings: Warning[] = [];
  const ignore = (): void => undefined;
  const logger: LogSink = { debug: ignore, info: ignore, error: ignore, warn: (fields, message) => warnings.push({ message, fields }) };
  let streamRequests = 0;
  let listings = 0;
  const harness = await startHarness(scenario.opened, { logger }, (fake) =>
    fake.server.on('request', (req: { url?: string }) => {
      if (req.url?.startsWith('/v1/event/stream')) streamRequests++;
      // The listings of allocations, not the supervisor's freshness reads (a prefix that matches none).
      if (req.url?.startsWith('/v1/allocations') && !req.url.includes('prefix=')) listings++;
    }),
  );
  harness.fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario), rewriteLine });
  await driveTo(harness.clock, scenario.closed + 1_000);
  return { harness, warnings, streamRequests: () => streamRequests, listings: () => listings };
}

/** A rolling update's batch of three allocations turning running, which the next batch repeats. */
const ROLLING_BAD_INDEX = 143;

describe('the supervisor over a stream with a corrupt batch', () => {
  it.each([
    ['garbled', (line: string) => `${line.slice(0, 500)}\u0007<<garbage>>${line.slice(500)}`, /^event stream batch 143 could not be decoded and was skipped: malformed JSON.*garbage/],
    [
      'a timestamp nested 5,000 deep',
      () => `{"Events":[{"Topic":"Node","Type":"X","Key":"n","Index":143,"Payload":{"Node":${'{"a":'.repeat(5_000)}{"Time":1795971902180095019}${'}'.repeat(5_000)}}}],"Index":${ROLLING_BAD_INDEX}}`,
      /^event stream batch 143 could not be decoded and was skipped: undecodable JSON: RangeError: nested deeper than 1000 levels \(near "\{\\"Events/,
    ],
    [
      'an event nested 5,000 deep',
      () => `{"Events":[{"Topic":"Allocation","Payload":${'['.repeat(5_000)}${']'.repeat(5_000)}}],"Index":${ROLLING_BAD_INDEX}}`,
      /^event 0 of event stream batch 143 could not be decoded and was skipped: Allocation event without a numeric Index \(near "Allocation: \[\[\[/,
    ],
  ])('%s: reports one bad-payload problem with the index, logs it, stays connected, lists the allocations and reaches every verdict', async (_what, rewrite, why) => {
    const { harness, warnings, streamRequests, listings } = await follow('rolling_update', (line, index) => (index === ROLLING_BAD_INDEX ? rewrite(line) : line));
    try {
      const bad = harness.problems.filter((p) => p.kind === 'bad-payload');
      expect(bad).toEqual([{ kind: 'bad-payload', index: ROLLING_BAD_INDEX, message: expect.stringMatching(why) }]);
      expect(harness.problems.filter((p) => p.kind !== 'bad-payload' && p.kind !== 'job-unavailable')).toEqual([]);
      expect(warnings.filter((w) => w.fields?.kind === 'bad-payload')).toEqual([{ message: bad[0]!.message, fields: { kind: 'bad-payload', index: ROLLING_BAD_INDEX } }]);
      expect(warnings.filter((w) => /connection lost/.test(w.message))).toEqual([]);
      expect(streamRequests()).toBe(1);
      // The listing at the start, and the one that recovers what the skipped batch carried.
      expect(listings()).toBe(2);
      // It kept judging: every allocation of the rolling update, with the outcome it gets without the fault.
      const direct = replayScenario('rolling_update').allocations;
      expect(harness.verdicts).toHaveLength(6);
      for (const record of harness.verdicts) expect(record.outcome).toEqual(direct.get(record.alloc.allocId)?.outcome);
      expect(harness.supervisor.supervised).toBe(0);
    } finally {
      await harness.close();
    }
  });

  it('reports 200,000 unusable events of one batch as one problem, with the count and three examples, and judges the rest of that batch', async () => {
    const junk = Array.from({ length: 200_000 }, (_, i) => `{"Topic":"Allocation","Type":"AllocationUpdated","Key":"junk-${i}","Index":42,"Payload":{}}`).join(',');
    const { harness, warnings } = await follow('failed_task', (line, index) => (index === 42 ? line.replace('{"Events":[', `{"Events":[${junk},`) : line));
    try {
      const bad = harness.problems.filter((p) => p.kind === 'bad-payload');
      const example = (i: number) => `event ${i}: Allocation event whose Payload has no Allocation with an ID \\(near "Allocation AllocationUpdated junk-${i}: \\{\\}"\\)`;
      expect(bad).toEqual([
        { kind: 'bad-payload', index: 42, message: expect.stringMatching(new RegExp(`^event stream batch 42: 200000 events could not be decoded and were skipped, for example ${[0, 1, 2].map(example).join('; ')}$`)) },
      ]);
      expect(warnings.filter((w) => w.fields?.kind === 'bad-payload')).toHaveLength(1);
      expect(harness.verdicts.map((v) => v.outcome)).toEqual([expect.objectContaining({ healthy: false, reasons: { main: 'Unhealthy because of failed task' } })]);
    } finally {
      await harness.close();
    }
  });

  it('an allocation its listing cannot decode is one problem naming it; the supervisor streams on', async () => {
    let ids: string[] = [];
    const harness = await startHarness(Date.UTC(2026, 10, 29, 18), {}, (fake) => {
      fake.cluster.registerJob(serviceJob('web'));
      ids = fake.cluster.placeAllocations('web').map((allocation) => String(allocation.ID));
      // Their client has them (Nomad watches an allocation from then).
      for (const id of ids) fake.cluster.receiveAllocation(id);
      const deep = `{"ID":"${ids[0]}","Deep":${'{"a":'.repeat(5_000)}{"Time":1795971902180095019}${'}'.repeat(5_000)}}`;
      fake.faults.failRequests({ status: 200, body: deep, path: `/v1/allocation/${ids[0]}`, times: Infinity });
    });
    try {
      await driveTo(harness.clock, harness.clock.now() + 1_000);
      expect(harness.problems.filter((p) => p.kind === 'bad-payload')).toEqual([
        {
          kind: 'bad-payload',
          index: expect.any(Number),
          message: expect.stringMatching(
            new RegExp(`^allocation listing at index \\d+: 1 allocation could not be decoded and was skipped: allocation ${ids[0]}: undecodable JSON: RangeError: nested deeper than 1000 levels \\(near "\\{\\\\"ID`),
          ),
        },
      ]);
      expect(harness.supervisor.actor.getSnapshot().value).toEqual({ running: 'streaming' });
      // Both are watched: the other from the listing, the skipped one from the stream (Nomad's buffer still has its placement).
      expect(harness.supervisor.supervised).toBe(2);
    } finally {
      await harness.close();
    }
  });

  it('reports an event without its allocation with the batch index, and judges the rest of that batch', async () => {
    // failed_task's placement batch: the one allocation is kept, its Job event loses its job.
    const { harness } = await follow('failed_task', (line, index) => {
      if (index !== 42) return line;
      const batch = parseLossless(line) as { Events: { Topic: string; Payload: unknown }[] };
      const job = batch.Events.find((e) => e.Topic === 'Job')!;
      job.Payload = { Job: null };
      return stringifyLossless(batch);
    });
    try {
      const bad = harness.problems.filter((p) => p.kind === 'bad-payload');
      expect(bad).toEqual([{ kind: 'bad-payload', index: 42, message: expect.stringMatching(/^event \d of event stream batch 42 could not be decoded and was skipped: Job event whose Payload has no Job with an ID \(near "Job PlanResult failed-task: \{\\"Job\\":null\}"\)$/) }]);
      expect(harness.verdicts.map((v) => v.outcome)).toEqual([expect.objectContaining({ healthy: false, reasons: { main: 'Unhealthy because of failed task' } })]);
    } finally {
      await harness.close();
    }
  });
});
