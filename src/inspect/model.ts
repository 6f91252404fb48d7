/**
 * What the inspector shows, kept current from a supervisor: its connection, every allocation being
 * judged (state, policy, tasks, times, verdict with Nomad's reasons), a bounded list of finished
 * ones, evaluation and exec session children, and recent problems. It learns of each step of every
 * machine from XState inspection events (hand `model.inspect` to createSupervisor) and of
 * verdicts, problems and the connection from the supervisor's streams (`attach`). Every change is
 * one delta with a key: a later delta of the same key replaces an earlier one, which lets a slow
 * client be sent only the latest. Nothing here reads or serialises configuration; any string that
 * contains a secret given to the model is redacted when serialised.
 */
import type { Subscription } from 'rxjs';
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { allocationHealthMachine, type AllocationHealthState } from '../../machines/allocationHealth.js';
import { formatGoDuration, healthyAt } from '../../machines/allocationHealthRules.js';
import type { AllocationHealthContext, HealthPolicySource } from '../../machines/allocationHealthTypes.js';
import type { EvaluationOutcome, EvaluationView } from '../../machines/evaluationOutcome.js';
import type { ExecSessionContext } from '../../machines/execSession.js';
import { childOfActorId } from '../../machines/supervisor.js';
import type { Clock } from '../clock/index.js';
import { BoundedHistory } from '../supervisor/boundedHistory.js';
import type { SupervisedAllocation, Supervisor } from '../supervisor/supervisor.js';
import type { ConnectionState, StateChange, SupervisorProblem, VerdictOutcome, VerdictRecord } from '../supervisor/types.js';

export interface TaskInfo {
  name: string;
  state: string;
  failed: boolean;
  restarts: number;
  startedAt: number | null;
  finishedAt: number | null;
  hook: string | null;
  sidecar: boolean;
}

export interface VerdictInfo {
  /** null for an allocation stopped before it was judged. */
  healthy: boolean | null;
  at: number;
  /** Per task, Nomad's explanation. */
  reasons: { task: string; reason: string }[];
}

export interface AllocationInfo {
  id: string;
  name: string | null;
  namespace: string;
  jobId: string;
  jobVersion: number | null;
  taskGroup: string;
  deploymentId: string | null;
  state: AllocationHealthState;
  finished: boolean;
  /** The last move of the health machine. */
  lastTransition: { from: AllocationHealthState; to: AllocationHealthState; at: number } | null;
  policy: {
    source: HealthPolicySource;
    minHealthyTimeMs: number;
    healthyDeadlineMs: number;
    /** The two durations as Nomad writes them ("10s", "5m0s"), so the page need not format Go durations. */
    minHealthyTime: string;
    healthyDeadline: string;
    useChecks: boolean;
    checks: { task: string; service: string; name: string; onUpdate: string }[];
  };
  clientStatus: string;
  desiredStatus: string;
  tasks: TaskInfo[];
  checks: { task: string; service: string; name: string; status: string }[];
  /** The latest task start: min_healthy_time counts from it. */
  latestStart: number | null;
  /** When it becomes healthy if nothing changes (or became, once healthy). */
  healthyAt: number | null;
  deadlineAt: number;
  checksPassingSince: number | null;
  /** Why the last update was ignored (malformed). */
  rejected: string | null;
  verdict: VerdictInfo | null;
  /** Time of the machine's latest step. */
  updatedAt: number;
}

export interface ConnectionInfo {
  state: ConnectionState;
  attempt: number;
  lastError: string | null;
  retryInMs: number | null;
  index: number;
  since: number;
}

export interface EvaluationInfo {
  id: string;
  state: string;
  status: string | null;
  jobId: string | null;
  description: string | null;
  chain: string[];
  /** In the Nomad CLI's words (placement failures with their metrics). */
  outcome: { ok: boolean; message: string } | null;
}

export interface ExecSessionInfo {
  id: string;
  allocId: string;
  task: string;
  tty: boolean;
  state: string;
  outcome: string | null;
}

export interface ProblemInfo {
  seq: number;
  at: number;
  kind: SupervisorProblem['kind'];
  message: string;
  allocId: string | null;
}

export type InspectorDelta =
  | { type: 'connection'; connection: ConnectionInfo }
  | { type: 'allocation'; allocation: AllocationInfo }
  | { type: 'evaluation'; evaluation: EvaluationInfo }
  | { type: 'execSession'; execSession: ExecSessionInfo }
  | { type: 'problem'; problem: ProblemInfo }
  /** Time passing, so that countdowns move between changes. */
  | { type: 'tick' };

export interface InspectorSnapshot {
  type: 'snapshot';
  /** The server's clock (virtual in the demo): the page counts down from it. */
  now: number;
  /** Set on a snapshot sent instead of the deltas a slow client could not take. */
  resynced: boolean;
  finishedLimit: number;
  connection: ConnectionInfo;
  allocations: AllocationInfo[];
  evaluations: EvaluationInfo[];
  execSessions: ExecSessionInfo[];
  problems: ProblemInfo[];
}

/** A delta as sent: its coalescing key and the server's clock. */
export type InspectorMessage = InspectorDelta & { now: number };

export interface InspectionModelOptions {
  clock: Clock;
  /** Finished allocations kept (default 200). */
  finishedLimit?: number;
  /** Problems kept (default 50); also the number of evaluations and exec sessions kept. */
  recentLimit?: number;
  /** Strings never to show (the Nomad token, Consul's): replaced wherever they appear. */
  secrets?: readonly (string | undefined)[];
}

export type DeltaListener = (key: string, message: InspectorMessage) => void;

const REDACTED = '[redacted]';

function verdictInfo(outcome: VerdictOutcome | null): VerdictInfo | null {
  if (outcome === null) return null;
  if ('stopped' in outcome) return { healthy: null, at: outcome.at, reasons: [] };
  if ('undetermined' in outcome) return { healthy: null, at: outcome.at, reasons: [{ task: '', reason: outcome.reason }] };
  return { healthy: outcome.healthy, at: outcome.at, reasons: Object.entries(outcome.reasons).map(([task, reason]) => ({ task, reason })) };
}

function allocationInfo(supervised: SupervisedAllocation, previous: AllocationInfo | undefined): AllocationInfo {
  const { alloc, state, health } = supervised;
  return {
    id: alloc.allocId,
    name: alloc.name ?? null,
    namespace: alloc.namespace,
    jobId: alloc.jobId,
    jobVersion: supervised.jobVersion ?? null,
    taskGroup: alloc.taskGroup,
    deploymentId: alloc.deploymentId ?? null,
    state,
    finished: false,
    lastTransition: previous?.lastTransition ?? null,
    policy: {
      source: health.policy.source,
      minHealthyTimeMs: health.policy.minHealthyTimeMs,
      healthyDeadlineMs: health.policy.healthyDeadlineMs,
      minHealthyTime: formatGoDuration(health.policy.minHealthyTimeMs),
      healthyDeadline: formatGoDuration(health.policy.healthyDeadlineMs),
      useChecks: health.policy.useChecks,
      checks: health.policy.expectedChecks.map(({ task, service, name, onUpdate }) => ({ task, service, name, onUpdate })),
    },
    clientStatus: health.view.clientStatus,
    desiredStatus: health.view.desiredStatus,
    // Field by field: whatever else a view may come to carry is not published unasked.
    tasks: Object.entries(health.view.tasks).map(([name, task]) => ({
      name,
      state: task.state,
      failed: task.failed,
      restarts: task.restarts,
      startedAt: task.startedAt,
      finishedAt: task.finishedAt,
      hook: task.hook,
      sidecar: task.sidecar,
    })),
    checks: health.checks.map(({ task, service, name, status }) => ({ task, service, name, status })),
    latestStart: health.tasks.kind === 'started' ? health.tasks.latestStart : null,
    healthyAt: becameHealthyAt(health) ?? healthyAt(health),
    deadlineAt: health.deadlineAt,
    checksPassingSince: health.checksPassingSince,
    rejected: health.rejected,
    verdict: verdictInfo(health.outcome),
    updatedAt: health.now,
  };
}

/** A healthy verdict's time is when it became healthy. */
function becameHealthyAt(health: AllocationHealthContext): number | null {
  const outcome = health.outcome;
  return outcome !== null && 'healthy' in outcome && outcome.healthy ? outcome.at : null;
}

/** A state value in words: `open` for { running: { phase: 'open' } }, parallel regions joined. */
function stateName(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value !== 'object' || value === null) return String(value);
  return Object.values(value as Record<string, unknown>).map(stateName).join(', ');
}

function describeExecOutcome(outcome: ExecSessionContext['outcome']): string | null {
  if (outcome === undefined) return null;
  if (outcome.status === 'exited') return `exited with code ${outcome.exitCode}`;
  if (outcome.status === 'failed') return `failed: ${outcome.error.message}`;
  return outcome.reason === 'timeout' ? 'timed out' : 'cancelled';
}

export class InspectionModel {
  /** Pass to createSupervisor({ inspect }): every machine's steps arrive here. */
  readonly inspect: (event: InspectionEvent) => void;
  readonly finishedLimit: number;
  readonly clock: Clock;
  private readonly secrets: string[];
  private readonly live = new Map<string, AllocationInfo>();
  private readonly finished: BoundedHistory<AllocationInfo>;
  private readonly evaluations: BoundedHistory<EvaluationInfo>;
  private readonly execSessions: BoundedHistory<ExecSessionInfo>;
  private readonly problems: BoundedHistory<ProblemInfo>;
  private readonly listeners = new Set<DeltaListener>();
  private connection: ConnectionInfo;
  private supervisor: Supervisor | undefined;
  private problemSeq = 0;

  constructor(options: InspectionModelOptions) {
    this.clock = options.clock;
    this.finishedLimit = options.finishedLimit ?? 200;
    const recent = options.recentLimit ?? 50;
    this.finished = new BoundedHistory(this.finishedLimit);
    this.evaluations = new BoundedHistory(recent);
    this.execSessions = new BoundedHistory(recent);
    this.problems = new BoundedHistory(recent);
    this.secrets = (options.secrets ?? []).filter((secret): secret is string => typeof secret === 'string' && secret !== '');
    this.connection = { state: 'connecting', attempt: 0, lastError: null, retryInMs: null, index: 0, since: this.clock.now() };
    this.inspect = (event) => this.onInspection(event);
  }

  /**
   * Follows the supervisor's streams, starting from the allocations it judges now; returns the
   * function that stops following. Without `inspect` given to the supervisor, the model still
   * follows every move and verdict, but not the steps that change only times or task states.
   */
  attach(supervisor: Supervisor): () => void {
    this.supervisor = supervisor;
    for (const supervised of supervisor.supervisedAllocations()) this.updateAllocation(supervised);
    const subscriptions: Subscription[] = [
      supervisor.connection$.subscribe((state) => this.onConnection(state)),
      supervisor.changes$.subscribe((change) => this.onChange(change)),
      supervisor.verdicts$.subscribe((record) => this.onVerdict(record)),
      supervisor.problems$.subscribe((problem) => this.onProblem(problem)),
    ];
    return () => {
      for (const subscription of subscriptions) subscription.unsubscribe();
      this.supervisor = undefined;
    };
  }

  /** Receives every delta from now on, with its coalescing key. */
  subscribe(listener: DeltaListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  snapshot(resynced = false): InspectorSnapshot {
    return {
      type: 'snapshot',
      now: this.clock.now(),
      resynced,
      finishedLimit: this.finishedLimit,
      connection: this.connection,
      allocations: [...this.live.values(), ...this.finished.values()],
      evaluations: [...this.evaluations.values()],
      execSessions: [...this.execSessions.values()],
      problems: [...this.problems.values()],
    };
  }

  /** JSON with every secret redacted: the one way anything of the model leaves the process. */
  serialize(message: InspectorSnapshot | InspectorMessage): string {
    if (this.secrets.length === 0) return JSON.stringify(message);
    return JSON.stringify(message, (_key, value: unknown) =>
      typeof value === 'string' ? this.secrets.reduce((text, secret) => text.split(secret).join(REDACTED), value) : value,
    );
  }

  /** Counts kept, for the tests of bounded memory. */
  get sizes(): { live: number; finished: number; evaluations: number; execSessions: number; problems: number } {
    return { live: this.live.size, finished: this.finished.size, evaluations: this.evaluations.size, execSessions: this.execSessions.size, problems: this.problems.size };
  }

  /** Tells every listener the time (the server does so while clients are connected). */
  tick(): void {
    this.emit('tick', { type: 'tick' });
  }

  private emit(key: string, delta: InspectorDelta): void {
    const message = { ...delta, now: this.clock.now() };
    for (const listener of this.listeners) listener(key, message);
  }

  private onInspection(event: InspectionEvent): void {
    if (event.type !== '@xstate.snapshot') return;
    const snapshot = event.snapshot as { machine?: unknown; value?: unknown; status?: string; context?: unknown; output?: unknown };
    if (snapshot.machine === allocationHealthMachine) {
      const supervised = this.supervisor?.supervisedAllocation(event.rootId);
      if (supervised) this.updateAllocation(supervised);
      return;
    }
    const id = (event.actorRef as Partial<AnyActorRef>).id;
    const child = typeof id === 'string' ? childOfActorId(id) : undefined;
    if (child?.kind === 'evaluation') this.updateEvaluation(child.id, snapshot);
    else if (child?.kind === 'exec') this.updateExecSession(child.id, snapshot);
  }

  private updateAllocation(supervised: SupervisedAllocation): void {
    const id = supervised.alloc.allocId;
    const allocation = allocationInfo(supervised, this.live.get(id));
    this.live.set(id, allocation);
    this.emit(`allocation:${id}`, { type: 'allocation', allocation });
  }

  /**
   * The supervisor's own account of each move (the first step included, which no earlier snapshot
   * shows). Read afresh, so that a model attached without the inspect hook still follows the moves.
   */
  private onChange(change: StateChange): void {
    const supervised = this.supervisor?.supervisedAllocation(change.alloc.allocId);
    if (!supervised) return;
    const id = change.alloc.allocId;
    const allocation = { ...allocationInfo(supervised, this.live.get(id)), lastTransition: { from: change.from, to: change.to, at: change.at } };
    this.live.set(id, allocation);
    this.emit(`allocation:${id}`, { type: 'allocation', allocation });
  }

  private onVerdict(record: VerdictRecord): void {
    const id = record.alloc.allocId;
    const known = this.live.get(id);
    if (!known) return;
    this.live.delete(id);
    const allocation = { ...known, finished: true, verdict: verdictInfo(record.outcome) };
    this.finished.set(id, allocation);
    this.emit(`allocation:${id}`, { type: 'allocation', allocation });
  }

  private onConnection(state: ConnectionState): void {
    const context = this.supervisor?.actor.getSnapshot().context.connection;
    this.connection = {
      state,
      attempt: context?.attempt ?? 0,
      lastError: context?.lastError ?? null,
      retryInMs: context?.retryInMs ?? null,
      index: context?.index ?? 0,
      since: this.clock.now(),
    };
    this.emit('connection', { type: 'connection', connection: this.connection });
  }

  private onProblem(problem: SupervisorProblem): void {
    const info: ProblemInfo = { seq: ++this.problemSeq, at: this.clock.now(), kind: problem.kind, message: problem.message, allocId: problem.allocId ?? null };
    this.problems.set(String(info.seq), info);
    this.emit(`problem:${info.seq}`, { type: 'problem', problem: info });
  }

  private updateEvaluation(id: string, snapshot: { value?: unknown; status?: string; context?: unknown; output?: unknown }): void {
    const context = snapshot.context as { evalId: string; chain: string[]; evaluation?: EvaluationView } | undefined;
    const output = snapshot.status === 'done' ? (snapshot.output as EvaluationOutcome | undefined) : undefined;
    const evaluation: EvaluationInfo = {
      id,
      state: stateName(snapshot.value),
      status: context?.evaluation?.Status ?? null,
      jobId: context?.evaluation?.JobID ?? null,
      description: context?.evaluation?.StatusDescription ?? null,
      chain: context?.chain ?? [],
      outcome: output ? { ok: output.ok, message: output.message } : null,
    };
    this.evaluations.set(evaluation.id, evaluation);
    this.emit(`evaluation:${evaluation.id}`, { type: 'evaluation', evaluation });
  }

  private updateExecSession(id: string, snapshot: { value?: unknown; status?: string; context?: unknown }): void {
    const context = snapshot.context as ExecSessionContext | undefined;
    // The command and its arguments are not shown: they may carry credentials.
    const execSession: ExecSessionInfo = {
      id,
      allocId: context?.allocId ?? '',
      task: context?.task ?? '',
      tty: context?.tty ?? false,
      state: stateName(snapshot.value),
      outcome: describeExecOutcome(context?.outcome),
    };
    this.execSessions.set(execSession.id, execSession);
    this.emit(`execSession:${execSession.id}`, { type: 'execSession', execSession });
  }
}
