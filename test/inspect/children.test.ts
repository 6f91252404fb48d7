/**
 * The supervisor actor's children on the inspector: an exec session (without its command, which
 * may carry credentials) and a monitored evaluation, with their outcomes.
 */
import { EXEC_TARGET_JOB } from '../exec/harness.js';
import { driveTo, loadScenario, requestedIndex, stripNomadVerdict } from '../supervisor/support/harness.js';
import { fetchSnapshot, openLive, startInspected, until } from './support.js';

const START = Date.UTC(2026, 10, 29, 18);
const TOKEN = 'children-token-91d0';

test('an exec session run by the supervisor is shown with its allocation, task, states and exit, never its command or the token', async () => {
  const inspected = await startInspected(START, { token: TOKEN });
  try {
    const live = await openLive(inspected.server.url);
    inspected.fake.cluster.registerJob(EXEC_TARGET_JOB);
    const [allocation] = inspected.fake.cluster.placeAllocations(EXEC_TARGET_JOB.ID);
    inspected.fake.cluster.startTask(allocation!.ID);
    const session = inspected.supervisor.exec(allocation!.ID, { task: 'main', command: ['/bin/sh', '-c', 'echo classified-argument; exit 4'] });
    await expect(session.exitCode).resolves.toBe(4);
    const snapshot = await fetchSnapshot(inspected.server.url);
    expect(snapshot.execSessions).toEqual([expect.objectContaining({ allocId: allocation!.ID, task: 'main', tty: false, state: 'exited', outcome: 'exited with code 4' })]);
    await until(() => live.messages.some((m) => m.type === 'execSession' && (m.execSession as { state: string }).state === 'exited'));
    const states = live.messages.filter((m) => m.type === 'execSession').map((m) => (m.execSession as { state: string }).state);
    expect(states).toEqual(expect.arrayContaining(['connecting, unbounded', 'open, unbounded', 'exited']));
    const served = [JSON.stringify(snapshot), ...live.texts].join('\n');
    expect(served).not.toContain('classified-argument');
    expect(served).not.toContain(TOKEN);
    live.close();
  } finally {
    await inspected.close();
  }
});

test('a monitored evaluation is shown until its outcome, in the Nomad CLI words', async () => {
  const scenario = loadScenario('placement_failure');
  const inspected = await startInspected(scenario.opened);
  try {
    inspected.fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
    await driveTo(inspected.clock, scenario.opened + 12);
    const registration = inspected.fake.cluster.listEvaluations({ jobId: 'placement-failure' }).find((e) => e.TriggeredBy === 'job-register')!;
    const outcome = inspected.supervisor.monitorEvaluation(registration.ID);
    await driveTo(inspected.clock, scenario.opened + 1_000);
    const result = await outcome;
    const { evaluations } = await fetchSnapshot(inspected.server.url);
    expect(evaluations).toEqual([
      expect.objectContaining({ id: registration.ID, state: 'done', jobId: 'placement-failure', outcome: { ok: result.ok, message: result.message } }),
    ]);
    expect(result.ok).toBe(false);
  } finally {
    await inspected.close();
  }
});

test('the connection: a lost event stream shows as backing off with the attempt and reason, then streaming again', async () => {
  const inspected = await startInspected(START, { token: TOKEN });
  try {
    const live = await openLive(inspected.server.url);
    inspected.fake.faults.failRequests({ status: 500, body: 'agent on fire', path: '/v1/event/stream', times: 1 });
    inspected.fake.endStreams();
    await driveTo(inspected.clock, START + 30_000);
    const connections = live.messages.filter((m) => m.type === 'connection').map((m) => m.connection as { state: string; attempt: number; lastError: string | null });
    const backingOff = connections.filter((c) => c.state === 'backingOff');
    // The stream closed, then the reconnection was refused once: two attempts, each with its reason.
    expect(backingOff).toEqual([
      expect.objectContaining({ attempt: 1, lastError: 'event stream closed by the server' }),
      expect.objectContaining({ attempt: 2, lastError: expect.stringContaining('500') }),
    ]);
    expect(connections.at(-1)).toMatchObject({ state: 'streaming', attempt: 0 });
    expect((await fetchSnapshot(inspected.server.url)).connection.state).toBe('streaming');
    expect(live.texts.join('\n')).not.toContain(TOKEN);
    live.close();
  } finally {
    await inspected.close();
  }
});
