/**
 * What the inspector shows, kept current from a supervisor: its connection, every allocation being
 * judged (state, policy, tasks, times, verdict with Nomad's reasons, a timeline of its machine's
 * steps), a bounded list of finished ones, deployments with Nomad's progress counts, evaluation
 * and exec session children, and recent problems, all in the wire form of schema.ts. It learns of
 * each step of every machine from XState inspection events (hand `model.inspect` to
 * createSupervisor) and of verdicts, deployments, problems and the connection from the
 * supervisor's streams (`attach`). Every change is one delta with a key: a later delta of the same
 * key replaces an earlier one, which lets a slow client be sent only the latest. Nothing here reads
 * or serialises configuration; any string that contains a secret given to the model is redacted
 * when serialised.
 */
import type { Subscription } from 'rxjs';
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { allocationHealthMachine } from '../../machines/allocationHealth.js';
import { healthyAt } from '../../machines/allocationHealthRules.js';
import type { AllocationHealthContext } from '../../machines/allocationHealthTypes.js';
import type { EvaluationOutcome, EvaluationView } from '../../machines/evaluationOutcome.js';
import type { ExecSessionContext } from '../../machines/execSession.js';
import { childOfActorId } from '../../machines/supervisor.js';
import type { Clock } from '../clock/index.js';
import { BoundedHistory } from '../boundedHistory.js';
import type { SupervisedAllocation, Supervisor } from '../supervisor/supervisor.js';
import type { Deployment } from '../nomad/types.js';
import type { ConnectionState, StateChange, SupervisorProblem, VerdictOutcome, VerdictRecord } from '../supervisor/types.js';
import { deploymentInfo } from './deployments.js';
import { deletedPool, poolInfo, type InspectedPools } from './pools.js';
import {
  INSPECTOR_SCHEMA_VERSION,
  type AllocationInfo,
  type ConnectionInfo,
  type DeploymentInfo,
  type EvaluationInfo,
  type ExecSessionInfo,
  type InspectorDelta,
  type InspectorMessage,
  type InspectorSnapshot,
  type LiveMessage,
  type PoolInfo,
  type ProblemInfo,
  type TimelineInfo,
  type TimelineResponse,
  type VerdictInfo,
} from './schema.js';
import { isoTime, isoTimeOrNull } from './time.js';
import { AllocationTimeline } from './timeline.js';

export interface InspectionModelOptions {
  clock: Clock;
  /** Finished allocations kept (default 200). */
  finishedLimit?: number;
  /** Problems kept (default 50); also the number of deployments, evaluations and exec sessions kept. */
  recentLimit?: number;
  /** Steps kept in each allocation's timeline (default 50; 0: no timelines). */
  timelineLimit?: number;
  /** Strings never to show (the Nomad token, Consul's): replaced wherever they appear. */
  secrets?: readonly (string | undefined)[];
}

export type DeltaListener = (key: string, message: InspectorMessage) => void;

/** An allocation as shown, and its timeline (only with the inspect hook, and a timelineLimit above 0). */
interface Known {
  info: AllocationInfo;
  timeline: AllocationTimeline | undefined;
}

const REDACTED = '[redacted]';

function verdictInfo(outcome: VerdictOutcome | null): VerdictInfo | null {
  if (outcome === null) return null;
  if ('stopped' in outcome) return { healthy: null, at: isoTime(outcome.at), reasons: [] };
  if ('undetermined' in outcome) return { healthy: null, at: isoTime(outcome.at), reasons: [{ task: '', reason: outcome.reason }] };
  return {
    healthy: outcome.healthy,
    at: isoTime(outcome.at),
    reasons: Object.entries(outcome.reasons).map(([task, reason]) => ({ task, reason })),
  };
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
      startedAt: isoTimeOrNull(task.startedAt),
      finishedAt: isoTimeOrNull(task.finishedAt),
      hook: task.hook,
      sidecar: task.sidecar,
    })),
    checks: health.checks.map(({ task, service, name, status }) => ({ task, service, name, status })),
    watchingSince: isoTime(health.deadlineAt - health.policy.healthyDeadlineMs),
    latestStart: health.tasks.kind === 'started' ? isoTime(health.tasks.latestStart) : null,
    healthyAt: isoTimeOrNull(becameHealthyAt(health) ?? healthyAt(health)),
    deadlineAt: isoTime(health.deadlineAt),
    checksPassingSince: isoTimeOrNull(health.checksPassingSince),
    rejected: health.rejected,
    verdict: verdictInfo(health.outcome),
    updatedAt: isoTime(health.now),
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

interface InspectedSnapshot {
  machine?: unknown;
  value?: unknown;
  status?: string;
  context?: unknown;
  output?: unknown;
}

export class InspectionModel {
  /** Pass to createSupervisor({ inspect }): every machine's steps arrive here. */
  readonly inspect: (event: InspectionEvent) => void;
  readonly finishedLimit: number;
  readonly recentLimit: number;
  readonly clock: Clock;
  private readonly timelineLimit: number;
  private readonly secrets: string[];
  private readonly live = new Map<string, Known>();
  private readonly finished: BoundedHistory<Known>;
  private readonly deployments: BoundedHistory<DeploymentInfo>;
  private readonly evaluations: BoundedHistory<EvaluationInfo>;
  private readonly execSessions: BoundedHistory<ExecSessionInfo>;
  private readonly problems: BoundedHistory<ProblemInfo>;
  private readonly pools = new Map<number, PoolInfo>();
  private readonly listeners = new Set<DeltaListener>();
  private connection: ConnectionInfo;
  private supervisor: Supervisor | undefined;
  private problemSeq = 0;

  constructor(options: InspectionModelOptions) {
    this.clock = options.clock;
    this.finishedLimit = options.finishedLimit ?? 200;
    this.timelineLimit = options.timelineLimit ?? 50;
    const recent = (this.recentLimit = options.recentLimit ?? 50);
    this.finished = new BoundedHistory(this.finishedLimit);
    this.deployments = new BoundedHistory(recent);
    this.evaluations = new BoundedHistory(recent);
    this.execSessions = new BoundedHistory(recent);
    this.problems = new BoundedHistory(recent);
    this.secrets = (options.secrets ?? []).filter((secret): secret is string => typeof secret === 'string' && secret !== '');
    this.connection = { state: 'connecting', attempt: 0, lastError: null, retryInMs: null, index: 0, since: isoTime(this.clock.now()) };
    this.inspect = (event) => this.onInspection(event);
  }

  /**
   * Follows the supervisor's streams, starting from the allocations it judges now; returns the
   * function that stops following. Without `inspect` given to the supervisor, the model still
   * follows every move and verdict, but not the steps that change only times or task states, and
   * keeps no timelines.
   */
  attach(supervisor: Supervisor): () => void {
    this.supervisor = supervisor;
    for (const supervised of supervisor.supervisedAllocations()) this.updateAllocation(supervised);
    const subscriptions: Subscription[] = [
      supervisor.connection$.subscribe((state) => this.onConnection(state)),
      supervisor.changes$.subscribe((change) => this.onChange(change)),
      supervisor.verdicts$.subscribe((record) => this.onVerdict(record)),
      supervisor.deployments$.subscribe((deployment) => this.onDeployment(deployment)),
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
      schemaVersion: INSPECTOR_SCHEMA_VERSION,
      now: isoTime(this.clock.now()),
      resynced,
      finishedLimit: this.finishedLimit,
      recentLimit: this.recentLimit,
      connection: this.connection,
      allocations: [...this.live.values(), ...this.finished.values()].map((known) => known.info),
      deployments: [...this.deployments.values()],
      evaluations: [...this.evaluations.values()],
      execSessions: [...this.execSessions.values()],
      problems: [...this.problems.values()],
      pools: [...this.pools.values()],
    };
  }

  /** Follows runner pools (createRunnerPools): each environment's counts and runners. Returns the function that stops it. */
  attachPools(pools: InspectedPools): () => void {
    const update = (id: number): void => {
      const environment = pools.environment(id);
      const pool = environment ? poolInfo(environment) : deletedPool(id);
      if (environment) this.pools.set(id, pool);
      else this.pools.delete(id);
      this.emit(`pool:${id}`, { type: 'pool', pool });
    };
    for (const environment of pools.environments()) update(environment.id);
    const subscription = pools.changes$.subscribe(update);
    return () => subscription.unsubscribe();
  }

  /** The steps of an allocation's machine (live or among the finished kept), if it has a timeline. */
  timeline(allocationId: string): TimelineInfo | undefined {
    return (this.live.get(allocationId) ?? this.finished.get(allocationId))?.timeline?.info(allocationId);
  }

  /** JSON with every secret redacted: the one way anything of the model leaves the process. */
  serialize(message: LiveMessage | TimelineResponse): string {
    if (this.secrets.length === 0) return JSON.stringify(message);
    return JSON.stringify(message, (_key, value: unknown) =>
      typeof value === 'string' ? this.secrets.reduce((text, secret) => text.split(secret).join(REDACTED), value) : value,
    );
  }

  /** Counts kept, for the tests of bounded memory. */
  get sizes(): { live: number; finished: number; deployments: number; evaluations: number; execSessions: number; problems: number } {
    return {
      live: this.live.size,
      finished: this.finished.size,
      deployments: this.deployments.size,
      evaluations: this.evaluations.size,
      execSessions: this.execSessions.size,
      problems: this.problems.size,
    };
  }

  /** Tells every listener the time (the server does so while clients are connected). */
  tick(): void {
    this.emit('tick', { type: 'tick' });
  }

  private emit(key: string, delta: InspectorDelta): void {
    const message = { ...delta, now: isoTime(this.clock.now()) };
    for (const listener of this.listeners) listener(key, message);
  }

  private onInspection(event: InspectionEvent): void {
    if (event.type !== '@xstate.snapshot') return;
    const snapshot = event.snapshot as InspectedSnapshot;
    if (snapshot.machine === allocationHealthMachine) {
      const supervised = this.supervisor?.supervisedAllocation(event.rootId);
      if (!supervised) return;
      this.recordStep(supervised, event.event);
      // The start only sets the machine up: the first observation follows at once.
      if (event.event.type !== 'xstate.init') this.updateAllocation(supervised);
      return;
    }
    const id = (event.actorRef as Partial<AnyActorRef>).id;
    const child = typeof id === 'string' ? childOfActorId(id) : undefined;
    if (child?.kind === 'evaluation') this.updateEvaluation(child.id, snapshot);
    else if (child?.kind === 'exec') this.updateExecSession(child.id, snapshot);
  }

  private recordStep(supervised: SupervisedAllocation, event: { type: string }): void {
    if (this.timelineLimit <= 0) return;
    const id = supervised.alloc.allocId;
    const known = this.live.get(id) ?? this.finished.get(id);
    const timeline = known?.timeline ?? new AllocationTimeline(this.timelineLimit);
    timeline.record(event, supervised.state, supervised.health);
    if (known) known.timeline = timeline;
    else this.live.set(id, { info: allocationInfo(supervised, undefined), timeline });
  }

  private updateAllocation(supervised: SupervisedAllocation, lastTransition?: AllocationInfo['lastTransition']): void {
    const id = supervised.alloc.allocId;
    const known = this.live.get(id) ?? this.finished.get(id);
    const info = allocationInfo(supervised, known?.info);
    if (lastTransition) info.lastTransition = lastTransition;
    // An allocation judged again (moved into another deployment) leaves the finished ones.
    this.finished.delete(id);
    this.live.set(id, { info, timeline: known?.timeline });
    this.emit(`allocation:${id}`, { type: 'allocation', allocation: info });
  }

  /**
   * The supervisor's own account of each move (the first step included, which no earlier snapshot
   * shows). Read afresh, so that a model attached without the inspect hook still follows the moves.
   */
  private onChange(change: StateChange): void {
    const supervised = this.supervisor?.supervisedAllocation(change.alloc.allocId);
    if (!supervised) return;
    this.updateAllocation(supervised, { from: change.from, to: change.to, at: isoTime(change.at) });
  }

  private onVerdict(record: VerdictRecord): void {
    const id = record.alloc.allocId;
    const known = this.live.get(id);
    if (!known) return;
    this.live.delete(id);
    known.timeline?.settle();
    const info = { ...known.info, finished: true, verdict: verdictInfo(record.outcome) };
    this.finished.set(id, { info, timeline: known.timeline });
    this.emit(`allocation:${id}`, { type: 'allocation', allocation: info });
  }

  private onDeployment(deployment: Deployment): void {
    const info = deploymentInfo(deployment, this.clock.now());
    if (info.id === '') return;
    this.deployments.set(info.id, info);
    this.emit(`deployment:${info.id}`, { type: 'deployment', deployment: info });
  }

  private onConnection(state: ConnectionState): void {
    const context = this.supervisor?.actor.getSnapshot().context.connection;
    this.connection = {
      state,
      attempt: context?.attempt ?? 0,
      lastError: context?.lastError ?? null,
      retryInMs: context?.retryInMs ?? null,
      index: context?.index ?? 0,
      since: isoTime(this.clock.now()),
    };
    this.emit('connection', { type: 'connection', connection: this.connection });
  }

  private onProblem(problem: SupervisorProblem): void {
    const info: ProblemInfo = {
      seq: ++this.problemSeq,
      at: isoTime(this.clock.now()),
      kind: problem.kind,
      message: problem.message,
      allocId: problem.allocId ?? null,
    };
    this.problems.set(String(info.seq), info);
    this.emit(`problem:${info.seq}`, { type: 'problem', problem: info });
  }

  private updateEvaluation(id: string, snapshot: InspectedSnapshot): void {
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

  private updateExecSession(id: string, snapshot: InspectedSnapshot): void {
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
