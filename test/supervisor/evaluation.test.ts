import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createActor, fromPromise, toPromise } from 'xstate';
import { VirtualClock, settle } from '../../src/clock/index.js';
import { evaluationMachine, READ_RETRY_MAX_MS, READ_RETRY_MS, type ReadEvaluationInput } from '../../machines/evaluation.js';
import type { EvaluationView } from '../../machines/evaluationOutcome.js';
import { NomadHttpError } from '../../src/nomad/errors.js';

const fixtures = join(__dirname, '..', 'fixtures', 'nomad-1.1.2');

function apiBody(name: string): EvaluationView {
  const exchange = JSON.parse(readFileSync(join(fixtures, 'api', `${name}.json`), 'utf8')) as { response: { body: string } };
  return JSON.parse(exchange.response.body) as EvaluationView;
}

/** Every Evaluation payload of a scenario's stream, in stream order. */
function streamEvaluations(scenario: string): EvaluationView[] {
  const out: EvaluationView[] = [];
  for (const line of readFileSync(join(fixtures, 'scenarios', scenario, 'stream.jsonl'), 'utf8').split('\n')) {
    if (!line) continue;
    const batch = JSON.parse((JSON.parse(line) as { raw: string }).raw) as {
      Events?: { Topic: string; Payload: { Evaluation?: EvaluationView } }[];
    };
    for (const event of batch.Events ?? []) if (event.Payload.Evaluation) out.push(event.Payload.Evaluation);
  }
  return out;
}

class NotFound extends Error {
  readonly status = 404;
}

/** A Nomad that answers reads from a table of evaluation versions, blocking queries included. */
function nomadOf(versions: EvaluationView[]) {
  const reads: ReadEvaluationInput[] = [];
  const waiting: { input: ReadEvaluationInput; resolve: (e: EvaluationView) => void }[] = [];
  const latest = (id: string) => versions.filter((v) => v.ID === id).at(-1);
  const readEvaluation = fromPromise<EvaluationView, ReadEvaluationInput>(({ input }) => {
    reads.push(input);
    const current = latest(input.evalId);
    if (!current) return Promise.reject(new NotFound(`eval not found`));
    if ((current.ModifyIndex ?? 0) > input.index) return Promise.resolve(current);
    return new Promise((resolve) => waiting.push({ input, resolve }));
  });
  const publish = (evaluation: EvaluationView) => {
    versions.push(evaluation);
    for (const w of waiting.splice(0)) {
      const current = latest(w.input.evalId);
      if (current && (current.ModifyIndex ?? 0) > w.input.index) w.resolve(current);
      else waiting.push(w);
    }
  };
  return { readEvaluation, reads, publish };
}

function start(evalId: string, nomad: ReturnType<typeof nomadOf>, streamUp: boolean, clock = new VirtualClock()) {
  const actor = createActor(evaluationMachine.provide({ actors: { readEvaluation: nomad.readEvaluation } }), {
    input: { evalId, streamUp },
    clock,
  });
  actor.start();
  return { actor, done: toPromise(actor), clock };
}

describe('evaluation machine', () => {
  test('an evaluation that finished before monitoring began is judged from the first read: placement_failure names group app, memory and the blocked evaluation', async () => {
    const failed = apiBody('get_evaluation_failed_tg_allocs');
    const { done } = start(failed.ID, nomadOf([failed]), true);
    const outcome = await done;
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.failures.map((f) => f.group)).toEqual(['app']);
    expect(outcome.blockedEval).toBe(failed.BlockedEval);
    expect(outcome.message).toContain('Task Group "app" (failed to place 1 allocation)');
    expect(outcome.message).toContain('* Dimension "memory" exhausted on 1 nodes');
    expect(outcome.message).toContain('* Resources exhausted on 1 nodes');
    expect(outcome.message).toContain('* Nodes evaluated: 1, filtered: 0, exhausted: 1');
    expect(outcome.message).toContain(`Evaluation "${failed.BlockedEval}" waiting for additional capacity to place remainder`);
  });

  test('follows the placement_failure stream from pending to the complete update with FailedTGAllocs', async () => {
    const updates = streamEvaluations('placement_failure');
    const registration = updates.find((e) => e.Status === 'pending' && e.ID.startsWith('78ec1a39'));
    if (!registration) throw new Error('fixture lacks the registration evaluation');
    const { actor, done } = start(registration.ID, nomadOf([registration]), true);
    await settle();
    expect(actor.getSnapshot().value).toBe('watching');
    for (const evaluation of updates) actor.send({ type: 'EVALUATION.UPDATED', evaluation });
    const outcome = await done;
    expect(outcome.ok).toBe(false);
    expect(outcome.status).toBe('complete');
    expect(!outcome.ok && outcome.failures[0]?.metrics.DimensionExhausted).toEqual({ memory: 1 });
  });

  test('an older update never replaces a newer one', async () => {
    const updates = streamEvaluations('placement_failure').filter((e) => e.ID.startsWith('78ec1a39'));
    const pending = updates[0]!;
    const { actor } = start(pending.ID, nomadOf([pending]), true);
    await settle();
    actor.send({ type: 'EVALUATION.UPDATED', evaluation: { ...pending, ModifyIndex: 1 } });
    expect(actor.getSnapshot().context.evaluation?.ModifyIndex).toBe(pending.ModifyIndex);
    actor.stop();
  });

  test('a successful job-register evaluation is a success', async () => {
    const complete = apiBody('get_evaluation_complete');
    const outcome = await start(complete.ID, nomadOf([complete]), true).done;
    expect(outcome).toMatchObject({ ok: true, status: 'complete', evalId: complete.ID });
  });

  test('canceled without placement failures is a failure carrying the status description', async () => {
    const blocked = apiBody('get_evaluation_blocked');
    const canceled = { ...blocked, Status: 'canceled', StatusDescription: 'job purged', FailedTGAllocs: null, ModifyIndex: 138 };
    const outcome = await start(canceled.ID, nomadOf([canceled]), true).done;
    expect(outcome).toMatchObject({ ok: false, status: 'canceled' });
    expect(outcome.message).toBe(`Evaluation "${canceled.ID}" finished with status "canceled": job purged`);
  });

  test('with the stream down it falls back to blocking queries from the last index seen, and back to the stream when it returns', async () => {
    const updates = streamEvaluations('placement_failure').filter((e) => e.ID.startsWith('78ec1a39'));
    const [pending, planned, complete] = updates;
    const nomad = nomadOf([pending!]);
    const { actor, done } = start(pending!.ID, nomad, false);
    await settle();
    expect(actor.getSnapshot().value).toBe('polling');
    expect(nomad.reads.at(-1)).toEqual({ evalId: pending!.ID, index: pending!.ModifyIndex });
    nomad.publish(planned!);
    await settle(2);
    expect(nomad.reads.at(-1)).toEqual({ evalId: pending!.ID, index: planned!.ModifyIndex });
    actor.send({ type: 'STREAM.UP' });
    expect(actor.getSnapshot().value).toBe('watching');
    actor.send({ type: 'EVALUATION.UPDATED', evaluation: complete! });
    expect((await done).status).toBe('complete');
  });

  test('follows NextEval only after its Wait, on the injected clock', async () => {
    const first: EvaluationView = { ID: 'first', Status: 'complete', ModifyIndex: 10, NextEval: 'second', Wait: 30e9 };
    const second: EvaluationView = { ID: 'second', Status: 'complete', ModifyIndex: 12 };
    const nomad = nomadOf([first, second]);
    const { actor, done, clock } = start('first', nomad, true);
    await settle();
    expect(actor.getSnapshot().value).toBe('waitingForNext');
    clock.advance(29_999);
    expect(nomad.reads.map((r) => r.evalId)).toEqual(['first']);
    clock.advance(1);
    const outcome = await done;
    expect(outcome).toMatchObject({ ok: true, evalId: 'second', chain: ['first', 'second'] });
  });

  test('an unknown evaluation ends at once with the CLI message', async () => {
    const outcome = await start('nope', nomadOf([]), true).done;
    expect(outcome).toMatchObject({ ok: false, status: 'not-found', message: 'No evaluation with id "nope" found' });
  });

  test('a read that fails for another reason is retried after a delay', async () => {
    let calls = 0;
    const complete = apiBody('get_evaluation_complete');
    const readEvaluation = fromPromise<EvaluationView, ReadEvaluationInput>(async () => {
      calls++;
      if (calls === 1) throw new Error('connection refused');
      return complete;
    });
    const clock = new VirtualClock();
    const actor = createActor(evaluationMachine.provide({ actors: { readEvaluation } }), {
      input: { evalId: complete.ID, streamUp: true },
      clock,
    }).start();
    await settle();
    expect(actor.getSnapshot().value).toBe('retrying');
    clock.advance(READ_RETRY_MS);
    expect((await toPromise(actor)).ok).toBe(true);
    expect(calls).toBe(2);
  });

  test.each([
    ['Retry-After: 12', 12_000, 12_000],
    ['a Retry-After below the usual delay', 200, READ_RETRY_MS],
    ['an hour of Retry-After (capped)', 3_600_000, READ_RETRY_MAX_MS],
  ])('a read answered 429 with %s is retried when the server said', async (_what, retryAfterMs, wait) => {
    let calls = 0;
    const complete = apiBody('get_evaluation_complete');
    const readEvaluation = fromPromise<EvaluationView, ReadEvaluationInput>(async () => {
      calls++;
      if (calls === 1) throw new NomadHttpError(429, 'GET', `/v1/evaluation/${complete.ID}`, 'rate limited', { retryAfterMs });
      return complete;
    });
    const clock = new VirtualClock();
    const actor = createActor(evaluationMachine.provide({ actors: { readEvaluation } }), { input: { evalId: complete.ID, streamUp: true }, clock }).start();
    await settle();
    clock.advance(wait - 1);
    await settle();
    expect(calls).toBe(1);
    clock.advance(1);
    expect((await toPromise(actor)).ok).toBe(true);
    expect(calls).toBe(2);
  });
});
