/**
 * What the page knows: the server's snapshot, then each delta applied in order, as the server
 * keeps it (the latest finished allocations, the latest deployments, evaluations, exec sessions and
 * problems), plus the timeline of the allocation it follows. Pure: no DOM.
 */
import {
  INSPECTOR_SCHEMA_VERSION,
  type AllocationInfo,
  type ConnectionInfo,
  type DeploymentInfo,
  type EvaluationInfo,
  type ExecSessionInfo,
  type LiveMessage,
  type PoolInfo,
  type ProblemInfo,
  type TimelineInfo,
} from '../schema.js';

export interface PageState {
  /** The server's clock, in milliseconds. */
  now: number;
  finishedLimit: number;
  recentLimit: number;
  /** The server speaks another version of the schema: the page says so rather than misread it. */
  schemaMismatch: number | null;
  connection: ConnectionInfo | null;
  allocations: Map<string, AllocationInfo>;
  deployments: Map<string, DeploymentInfo>;
  evaluations: Map<string, EvaluationInfo>;
  execSessions: Map<string, ExecSessionInfo>;
  problems: Map<string, ProblemInfo>;
  /** Runner pools by environment ID (all of them: the server keeps every live one). */
  pools: Map<number, PoolInfo>;
  /** The last timeline the server sent, for the allocation followed then (its `timeline` null: none kept). */
  timeline: { allocationId: string; timeline: TimelineInfo | null } | null;
}

export function emptyState(): PageState {
  return {
    now: 0,
    finishedLimit: 200,
    recentLimit: 50,
    schemaMismatch: null,
    connection: null,
    allocations: new Map(),
    deployments: new Map(),
    evaluations: new Map(),
    execSessions: new Map(),
    problems: new Map(),
    pools: new Map(),
    timeline: null,
  };
}

/** Sets the newest value of a key (moved to the end, as the server's history does), keeping the latest `limit`. */
function keepLatest<V>(map: Map<string, V>, key: string, value: V, limit: number, evictable: (value: V) => boolean = () => true): void {
  map.delete(key);
  map.set(key, value);
  let excess = [...map.values()].filter(evictable).length - limit;
  for (const [oldKey, oldValue] of map) {
    if (excess <= 0) break;
    if (!evictable(oldValue)) continue;
    map.delete(oldKey);
    excess -= 1;
  }
}

const byKey = <V>(values: readonly V[], key: (value: V) => string): Map<string, V> => new Map(values.map((value) => [key(value), value]));

export function apply(state: PageState, message: LiveMessage): void {
  const now = Date.parse(message.now);
  if (!Number.isNaN(now)) state.now = now;
  switch (message.type) {
    case 'snapshot':
      state.schemaMismatch = message.schemaVersion === INSPECTOR_SCHEMA_VERSION ? null : message.schemaVersion;
      state.finishedLimit = message.finishedLimit;
      state.recentLimit = message.recentLimit;
      state.connection = message.connection;
      state.allocations = byKey(message.allocations, (a) => a.id);
      state.deployments = byKey(message.deployments, (d) => d.id);
      state.evaluations = byKey(message.evaluations, (e) => e.id);
      state.execSessions = byKey(message.execSessions, (s) => s.id);
      state.problems = byKey(message.problems, (p) => String(p.seq));
      state.pools = new Map((message.pools ?? []).map((pool) => [pool.id, pool]));
      return;
    case 'allocation':
      // Only finished ones are let go, oldest first, as on the server.
      keepLatest(state.allocations, message.allocation.id, message.allocation, state.finishedLimit, (a) => a.finished);
      return;
    case 'deployment':
      return keepLatest(state.deployments, message.deployment.id, message.deployment, state.recentLimit);
    case 'evaluation':
      return keepLatest(state.evaluations, message.evaluation.id, message.evaluation, state.recentLimit);
    case 'execSession':
      return keepLatest(state.execSessions, message.execSession.id, message.execSession, state.recentLimit);
    case 'problem':
      return keepLatest(state.problems, String(message.problem.seq), message.problem, state.recentLimit);
    case 'pool':
      if (message.pool.state === 'deleted') state.pools.delete(message.pool.id);
      else state.pools.set(message.pool.id, message.pool);
      return;
    case 'connection':
      state.connection = message.connection;
      return;
    case 'timeline':
      state.timeline = { allocationId: message.allocationId, timeline: message.timeline };
      return;
    case 'tick':
      return;
  }
}
