/**
 * The page's state from the server's messages: a snapshot replaces everything, deltas update, the
 * finished allocations and recent items are kept to the server's limits, oldest let go first, a
 * timeline is kept with the allocation it is for, and another schema version is noticed.
 */
import { apply, emptyState } from '../../../src/inspect/browser/store.js';
import type { AllocationInfo, InspectorSnapshot, LiveMessage, ProblemInfo } from '../../../src/inspect/index.js';

const NOW = '2026-11-29T18:00:00.000Z';

function allocation(id: string, finished = false): AllocationInfo {
  return {
    id, name: `web.app[${id}]`, namespace: 'default', jobId: 'web', jobVersion: 0, taskGroup: 'app', deploymentId: null,
    state: finished ? 'healthy' : 'running', finished, lastTransition: null,
    policy: { source: 'update', minHealthyTimeMs: 10_000, healthyDeadlineMs: 300_000, useChecks: false, checks: [] },
    clientStatus: 'running', desiredStatus: 'run', tasks: [], checks: [], watchingSince: NOW, latestStart: null, healthyAt: null,
    deadlineAt: NOW, checksPassingSince: null, rejected: null, verdict: finished ? { healthy: true, at: NOW, reasons: [] } : null, updatedAt: NOW,
  };
}

function snapshot(fields: Partial<InspectorSnapshot> = {}): InspectorSnapshot {
  return {
    type: 'snapshot', schemaVersion: 1, now: NOW, resynced: false, finishedLimit: 2, recentLimit: 2,
    connection: { state: 'streaming', attempt: 0, lastError: null, retryInMs: null, index: 7, since: NOW },
    allocations: [], deployments: [], evaluations: [], execSessions: [], problems: [], ...fields,
  };
}

const problem = (seq: number): LiveMessage => ({ type: 'problem', now: NOW, problem: { seq, at: NOW, kind: 'bad-payload', message: `p${seq}`, allocId: null } satisfies ProblemInfo });

test('a snapshot sets everything and the server time; a delta updates one thing', () => {
  const state = emptyState();
  apply(state, snapshot({ allocations: [allocation('a'), allocation('b', true)] }));
  expect(state.now).toBe(Date.parse(NOW));
  expect([...state.allocations.keys()]).toEqual(['a', 'b']);
  expect(state.connection?.index).toBe(7);
  apply(state, { type: 'allocation', now: '2026-11-29T18:00:01.500Z', allocation: { ...allocation('a'), state: 'minHealthyWait' } });
  expect(state.allocations.get('a')?.state).toBe('minHealthyWait');
  expect(state.now).toBe(Date.parse(NOW) + 1_500);
  apply(state, { type: 'tick', now: '2026-11-29T18:00:02.000Z' });
  expect(state.now).toBe(Date.parse(NOW) + 2_000);
  apply(state, snapshot({ allocations: [allocation('c')] }));
  expect([...state.allocations.keys()]).toEqual(['c']);
});

test('finished allocations are kept to finishedLimit, oldest finished first; live ones are never let go', () => {
  const state = emptyState();
  apply(state, snapshot({ allocations: [allocation('live1'), allocation('f1', true), allocation('f2', true)] }));
  apply(state, { type: 'allocation', now: NOW, allocation: allocation('f3', true) });
  apply(state, { type: 'allocation', now: NOW, allocation: allocation('live2') });
  expect([...state.allocations.keys()].sort()).toEqual(['f2', 'f3', 'live1', 'live2']);
});

test('problems, deployments, evaluations, exec sessions: the latest recentLimit', () => {
  const state = emptyState();
  apply(state, snapshot());
  for (const seq of [1, 2, 3]) apply(state, problem(seq));
  expect([...state.problems.keys()]).toEqual(['2', '3']);
  for (const id of ['e1', 'e2', 'e1', 'e3']) {
    apply(state, { type: 'evaluation', now: NOW, evaluation: { id, state: 'reading', status: null, jobId: null, description: null, chain: [id], outcome: null } });
  }
  // e1 updated after e2: e2 is the oldest.
  expect([...state.evaluations.keys()]).toEqual(['e1', 'e3']);
});

test('a timeline is kept with the allocation it is for; another schema version is noticed', () => {
  const state = emptyState();
  apply(state, { type: 'timeline', now: NOW, allocationId: 'a', timeline: null });
  expect(state.timeline).toEqual({ allocationId: 'a', timeline: null });
  apply(state, snapshot({ schemaVersion: 2 as 1 }));
  expect(state.schemaMismatch).toBe(2);
  apply(state, snapshot());
  expect(state.schemaMismatch).toBeNull();
});
