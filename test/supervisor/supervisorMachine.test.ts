import { createActor, fromCallback, fromPromise, toPromise, type AnyActorRef } from 'xstate';
import { VirtualClock, settle } from '../../src/clock/index.js';
import { evaluationMachine, type ReadEvaluationInput } from '../../machines/evaluation.js';
import type { EvaluationView } from '../../machines/evaluationOutcome.js';
import { execSessionMachine, type ExecTransportCommand, type ExecSessionInput } from '../../machines/execSession.js';
import { evaluationActorId, execActorId, supervisorMachine } from '../../machines/supervisor.js';

function startSupervisor(evaluations: Map<string, EvaluationView>) {
  const reads: ReadEvaluationInput[] = [];
  const readEvaluation = fromPromise<EvaluationView, ReadEvaluationInput>(({ input }) => {
    reads.push(input);
    const found = evaluations.get(input.evalId);
    // A blocking query on an unchanged evaluation never returns in these tests.
    if (!found || (input.index > 0 && (found.ModifyIndex ?? 0) <= input.index)) return new Promise(() => undefined);
    return Promise.resolve(found);
  });
  let sendExit: ((code: number) => void) | undefined;
  const transport = fromCallback<ExecTransportCommand, ExecSessionInput>(({ sendBack }) => {
    sendBack({ type: 'TRANSPORT.OPENED' });
    sendExit = (exitCode) => sendBack({ type: 'TRANSPORT.EXITED', exitCode });
  });
  const clock = new VirtualClock();
  const actor = createActor(
    supervisorMachine.provide({
      actors: {
        evaluation: evaluationMachine.provide({ actors: { readEvaluation } }),
        execSession: execSessionMachine.provide({ actors: { transport } }),
      },
    }),
    { clock },
  ).start();
  return { actor, reads, clock, exit: (code: number) => sendExit?.(code) };
}

const pending = (id: string, index: number): EvaluationView => ({ ID: id, Status: 'pending', ModifyIndex: index });

describe('supervisor machine', () => {
  test('connection states follow the stream and are visible in the snapshot', () => {
    const { actor } = startSupervisor(new Map());
    expect(actor.getSnapshot().value).toEqual({ running: 'connecting' });
    actor.send({ type: 'CONNECTION.STREAMING', index: 40 });
    expect(actor.getSnapshot().value).toEqual({ running: 'streaming' });
    actor.send({ type: 'CONNECTION.BACKING_OFF', attempt: 2, retryInMs: 2000, reason: 'connection refused' });
    expect(actor.getSnapshot().value).toEqual({ running: 'backingOff' });
    expect(actor.getSnapshot().context.connection).toEqual({ attempt: 2, retryInMs: 2000, lastError: 'connection refused', index: 40 });
    actor.send({ type: 'CONNECTION.CONNECTING' });
    actor.send({ type: 'CONNECTION.RESYNCING' });
    expect(actor.getSnapshot().value).toEqual({ running: 'resyncing' });
    actor.send({ type: 'CONNECTION.STREAMING' });
    expect(actor.getSnapshot().context.connection).toMatchObject({ attempt: 0, index: 40, retryInMs: undefined });
    actor.stop();
  });

  test('an evaluation is a child actor found by its system id, fed stream updates, and removed when done', async () => {
    const { actor } = startSupervisor(new Map([['e1', pending('e1', 5)]]));
    actor.send({ type: 'CONNECTION.STREAMING' });
    actor.send({ type: 'EVALUATION.MONITOR', evalId: 'e1' });
    actor.send({ type: 'EVALUATION.MONITOR', evalId: 'e1' });
    expect(Object.keys(actor.getSnapshot().children)).toEqual([evaluationActorId('e1')]);
    const child = actor.system.get(evaluationActorId('e1')) as AnyActorRef;
    expect(child).toBeDefined();
    const done = toPromise(child);
    await settle();
    expect(child.getSnapshot().value).toBe('watching');
    actor.send({ type: 'EVALUATION.UPDATED', evaluation: { ID: 'other', Status: 'complete', ModifyIndex: 9 } });
    expect(child.getSnapshot().value).toBe('watching');
    actor.send({ type: 'EVALUATION.UPDATED', evaluation: { ID: 'e1', Status: 'complete', ModifyIndex: 9 } });
    await expect(done).resolves.toMatchObject({ ok: true, evalId: 'e1' });
    expect(actor.getSnapshot().context.evaluations).toEqual([]);
    expect(actor.getSnapshot().children).toEqual({});
    actor.stop();
  });

  test('evaluation children poll while the stream is down and go back to the stream when it is up', async () => {
    const { actor, reads } = startSupervisor(new Map([['e1', pending('e1', 5)]]));
    actor.send({ type: 'EVALUATION.MONITOR', evalId: 'e1' });
    await settle();
    const child = actor.system.get(evaluationActorId('e1')) as AnyActorRef;
    expect(child.getSnapshot().value).toBe('polling');
    expect(reads.at(-1)).toEqual({ evalId: 'e1', index: 5 });
    actor.send({ type: 'CONNECTION.STREAMING' });
    expect(child.getSnapshot().value).toBe('watching');
    actor.send({ type: 'CONNECTION.BACKING_OFF', attempt: 1, retryInMs: 500, reason: 'closed' });
    expect(child.getSnapshot().value).toBe('polling');
    actor.stop();
  });

  test('exec sessions are child actors; STOP ends every child', async () => {
    const { actor, exit } = startSupervisor(new Map([['e1', pending('e1', 5)]]));
    actor.send({ type: 'EVALUATION.MONITOR', evalId: 'e1' });
    actor.send({ type: 'EXEC.START', sessionId: 's1', session: { allocId: 'a', task: 'main', command: ['true'], tty: false } });
    const session = actor.system.get(execActorId('s1')) as AnyActorRef;
    expect(session.getSnapshot().value).toEqual({ running: { phase: 'open', deadline: 'unbounded' } });
    const evaluation = actor.system.get(evaluationActorId('e1')) as AnyActorRef;
    actor.send({ type: 'STOP' });
    expect(actor.getSnapshot().status).toBe('done');
    expect(session.getSnapshot().status).toBe('stopped');
    expect(evaluation.getSnapshot().status).toBe('stopped');
    exit(0);
  });

  test('a finished exec session leaves the children with its outcome', async () => {
    const { actor, exit } = startSupervisor(new Map());
    actor.send({ type: 'EXEC.START', sessionId: 's1', session: { allocId: 'a', task: 'main', command: ['true'], tty: false } });
    const done = toPromise(actor.system.get(execActorId('s1')) as AnyActorRef);
    exit(3);
    await expect(done).resolves.toEqual({ status: 'exited', exitCode: 3 });
    expect(actor.getSnapshot().context.execSessions).toEqual([]);
    actor.send({ type: 'EXEC.CANCEL', sessionId: 's1' });
    actor.stop();
  });
});
