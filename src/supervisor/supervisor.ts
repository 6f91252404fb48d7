import { Observable, Subject, distinctUntilChanged, type Subscription } from 'rxjs';
import { createActor, fromPromise, toPromise, type Actor, type AnyActorRef } from 'xstate';
import { checksRequired } from '../../machines/allocationHealthRules.js';
import { evaluationMachine, type ReadEvaluationInput } from '../../machines/evaluation.js';
import { evaluationOutcome, isTerminalEvaluation, type EvaluationOutcome, type EvaluationView } from '../../machines/evaluationOutcome.js';
import { evaluationActorId, execActorId, supervisorMachine } from '../../machines/supervisor.js';
import type { TaskGroup } from '../nomad/types.js';
import type { AllocationHealthContext, CheckView, HealthPolicy } from '../../machines/allocationHealthTypes.js';
import type { AllocationHealthState } from '../../machines/allocationHealth.js';
import type { Allocation, Deployment, Evaluation, Job } from '../nomad/types.js';
import type { NomadClient } from '../nomad/client.js';
import type { Clock } from '../clock/index.js';
import { HealthRegistry, type HealthChange } from '../health/registry.js';
import type { InspectionObserver } from '../health/inspection.js';
import { healthPolicyFor, type OptInHealthPolicy } from '../health/policy.js';
import { allocationView } from '../health/allocationView.js';
import { ConsulCheckFanOut } from '../consul/checkFanOut.js';
import type { ConsulClient } from '../consul/client.js';
import { NomadCheckPoller } from '../nomadChecks/checkPoller.js';
import { ServiceCheckSources } from '../nomadChecks/checkSources.js';
import { JobCache } from '../streams/jobCache.js';
import { RunnerAllocationTracker, type AllocationCallbacks } from '../runners/allocationCallbacks.js';
import { ExecSessions, type ExecOptions, type ExecSession, type ExecSessionActor, type ExecTarget } from '../exec/sessions.js';
import { BoundedHistory } from './boundedHistory.js';
import { DeploymentWatch, type DeploymentResult } from './deploymentWatch.js';
import { InPlaceMoves, type MovingUpdate } from './inPlaceMoves.js';
import type { SupervisorInput } from './inputs.js';
import { silentLogger, structuredLogger, type LogSink, type Logger } from './logger.js';
import { resolveScope, type ResolvedScope, type SupervisorScope } from './scope.js';
import type { AllocationRef, ConnectionState, StateChange, SupervisorProblem, VerdictRecord } from './types.js';
import { AllocationNotJudgedError, SupervisorScopeError, SupervisorStoppedError } from './errors.js';
import { errorMessage } from '../errorMessage.js';
import { scrubSecrets } from '../secrets.js';

export interface SupervisorRuntimeOptions {
  /** The cluster's client: job, deployment and evaluation reads. */
  nomad: NomadClient;
  clock: Clock;
  /** Cluster updates, in order: the event stream (nomadSource.ts) or any other source. */
  source: Observable<SupervisorInput>;
  scope?: SupervisorScope;
  /** Judge allocations Nomad does not watch (batch, system, no update block) with this policy. */
  policy?: OptInHealthPolicy;
  /** Where log records go, called as pino is (a pino instance fits as it is). */
  logger?: LogSink;
  /** Verdicts kept after their allocation's actor is stopped (default 10,000). */
  historySize?: number;
  /** Inspection events of the supervisor actor, its children and every allocation's health machine (an observer or a function, as XState takes). */
  inspect?: InspectionObserver;
  /** Close `nomad` on stop (the supervisor created it). */
  ownsClient?: boolean;
  /**
   * Consul, watched with one blocking query for the datacenter's checks: with it, groups judged by
   * their service checks are judged, each allocation fed only its own checks; without it they are
   * left unjudged.
   */
  consul?: ConsulClient;
  /** Close `consul` on stop (the supervisor created it). */
  ownsConsul?: boolean;
}

export interface WaitForDeploymentOptions {
  /** Job version to wait for; default the job's current version. */
  version?: number;
  namespace?: string;
  /**
   * Fail at the first allocation judged unhealthy, rather than as Nomad's deployment watcher does
   * (at the progress deadline, leaving time for replacements).
   */
  failFast?: boolean;
}

interface Tracked {
  ref: AllocationRef;
  group: TaskGroup;
  jobVersion: number | undefined;
}

/** One allocation being judged, as its health machine sees it now (read-only, for the inspector). */
export interface SupervisedAllocation {
  readonly alloc: AllocationRef;
  /** The version of the job the allocation runs. */
  readonly jobVersion: number | undefined;
  readonly state: AllocationHealthState;
  readonly health: AllocationHealthContext;
}

interface DeploymentWaiter {
  watch: DeploymentWatch;
  resolve(result: DeploymentResult): void;
  reject(error: Error): void;
}

interface Waiter<T> {
  resolve(value: T): void;
  reject(error: Error): void;
}

/** Allocations that ended before we ever saw them run need no judging (old versions, purged jobs). */
function longFinished(allocation: Allocation): boolean {
  const stopping = allocation.DesiredStatus === 'stop' || allocation.DesiredStatus === 'evict';
  const ended = allocation.ClientStatus === 'complete' || allocation.ClientStatus === 'failed' || allocation.ClientStatus === 'lost';
  return stopping && ended;
}

function refOf(allocation: Allocation): AllocationRef {
  return {
    allocId: allocation.ID,
    name: allocation.Name,
    namespace: allocation.Namespace || 'default',
    jobId: allocation.JobID,
    taskGroup: allocation.TaskGroup,
    deploymentId: allocation.DeploymentID || undefined,
  };
}

function deploymentOf(allocation: Pick<Allocation, 'DeploymentID'>): string | undefined {
  return allocation.DeploymentID || undefined;
}

/**
 * An update that moves the allocation into another deployment than the one it was judged for (an
 * in-place update): Nomad's client then clears its health and watches it again (health_hook.go Update).
 */
function movedFrom(judged: string | undefined, allocation: Allocation): boolean {
  const deploymentId = deploymentOf(allocation);
  return deploymentId !== undefined && deploymentId !== judged;
}


/**
 * The supervisor at work: routes each cluster update to the one allocation health machine it
 * concerns (a registry of stepped snapshots, not child actors), keeps verdicts in a bounded
 * history once an allocation's machine is done, runs evaluations and exec sessions as children
 * of the supervisor actor, and answers the embedding API.
 */
export class Supervisor implements ExecTarget {
  /** The supervisor actor: connection state, evaluation and exec session children. */
  readonly actor: Actor<typeof supervisorMachine>;
  readonly verdicts$: Observable<VerdictRecord>;
  readonly changes$: Observable<StateChange>;
  readonly problems$: Observable<SupervisorProblem>;
  readonly connection$: Observable<ConnectionState>;
  /** Deployments of the jobs in scope, as each update arrives (for the inspector's progress view). */
  readonly deployments$: Observable<Deployment>;

  private readonly verdictSubject = new Subject<VerdictRecord>();
  private readonly changeSubject = new Subject<StateChange>();
  private readonly problemSubject = new Subject<SupervisorProblem>();
  private readonly deploymentSubject = new Subject<Deployment>();
  private readonly registry: HealthRegistry;
  private readonly jobs: JobCache;
  private readonly scope: ResolvedScope;
  private readonly logger: Logger;
  private readonly history: BoundedHistory<VerdictRecord>;
  /**
   * Allocations Nomad does not watch (and no opt-in policy covers), with why and in which
   * deployment: their updates are skipped until one moves them into another.
   */
  private readonly unwatched: BoundedHistory<{ readonly reason: string; readonly deploymentId: string | undefined }>;
  /** Allocations whose job could not be had, reported once each (later updates try again quietly). */
  private readonly jobFailures: BoundedHistory<string>;
  private readonly tracked = new Map<string, Tracked>();
  /** The latest update of allocations whose job is being looked up. */
  private readonly resolving = new Map<string, Allocation>();
  /** The update that moved an allocation into another deployment, until it is watched again from it. */
  private readonly rewatches = new Map<string, MovingUpdate>();
  /** Tells which allocations seen for the first time were moved in place into their deployment. */
  private readonly moves: InPlaceMoves;
  private readonly verdictWaiters = new Map<string, Waiter<VerdictRecord>[]>();
  private readonly deploymentWaiters = new Set<DeploymentWaiter>();
  private readonly evaluations = new Map<string, Promise<EvaluationOutcome>>();
  /** Followers of every allocation update in scope: runner-manager callbacks, the runner pools. */
  private readonly runnerTrackers = new Set<{ handle(allocation: Allocation): void }>();
  /** Exec sessions' connections, on the client's Nomad configuration; their actors are our children. */
  private readonly execSessions: ExecSessions;
  /** Rejects when the supervisor stops: raced against waits on child actors. */
  private readonly stoppedSignal: Promise<never>;
  private rejectStopped: (error: Error) => void = () => undefined;
  private readonly subscription: Subscription;
  /** Consul's checks, fanned out to the allocations judged by them (when a Consul source is given). */
  private readonly consul: ConsulCheckFanOut | undefined;
  private readonly consulSubscription: Subscription | undefined;
  /** Where allocations judged by service checks get them: Nomad's own checks polled, or Consul's. */
  private readonly checks: ServiceCheckSources;
  private stopped = false;

  constructor(private readonly options: SupervisorRuntimeOptions) {
    const { nomad, clock, inspect } = options;
    this.scope = resolveScope(options.scope);
    this.logger = structuredLogger(options.logger ?? silentLogger);
    this.history = new BoundedHistory(options.historySize ?? 10_000);
    this.unwatched = new BoundedHistory(options.historySize ?? 10_000);
    this.jobFailures = new BoundedHistory(options.historySize ?? 10_000);
    this.verdicts$ = this.verdictSubject.asObservable();
    this.changes$ = this.changeSubject.asObservable();
    this.problems$ = this.problemSubject.asObservable();
    this.deployments$ = this.deploymentSubject.asObservable();
    this.jobs = new JobCache(nomad, { clock });
    this.moves = new InPlaceMoves(nomad, options.historySize ?? 10_000);
    this.stoppedSignal = new Promise<never>((_, reject) => {
      this.rejectStopped = reject;
    });
    this.stoppedSignal.catch(() => undefined);
    this.registry = new HealthRegistry({ clock, ...(inspect ? { inspect } : {}) });
    this.registry.subscribe((change) => this.onHealthChange(change));
    this.consul = options.consul && new ConsulCheckFanOut((id, checks) => this.registry.updateChecks(id, checks));
    const listener = (id: string, checks: readonly CheckView[]): boolean => this.registry.updateChecks(id, checks);
    const waiting = (id: string): boolean => this.registry.status(id)?.state !== 'pending';
    const onError = (id: string, error: unknown): void => this.logger.debug("reading Nomad's checks failed; retrying", { allocId: id, error: errorMessage(error) });
    this.checks = new ServiceCheckSources(new NomadCheckPoller(nomad, { clock, listener, waiting, onError }), this.consul);
    this.consulSubscription = options.consul
      ?.watchHealthChecks({
        onError: (error) => this.report({ kind: 'consul-unavailable', message: `Consul health query failed; retrying: ${error.message}` }),
      })
      .subscribe({
        next: (update) => this.consul?.update(update.checks),
        error: (error: unknown) => this.report({ kind: 'consul-unavailable', message: `Consul health watch ended: ${errorMessage(error)}` }),
      });
    const readEvaluation = fromPromise<EvaluationView, ReadEvaluationInput>(async ({ input, signal }) => {
      const query = input.index > 0 ? { index: input.index, waitMs: 60_000 } : {};
      return (await nomad.getEvaluation(input.evalId, { ...query, signal })).body;
    });
    this.execSessions = new ExecSessions(nomad.config, { clock });
    this.actor = createActor(
      supervisorMachine.provide({
        actors: { evaluation: evaluationMachine.provide({ actors: { readEvaluation } }), execSession: this.execSessions.machine },
      }),
      { clock, ...(inspect ? { inspect } : {}) },
    );
    this.connection$ = new Observable<ConnectionState>((subscriber) => {
      const toState = (): ConnectionState => {
        const snapshot = this.actor.getSnapshot();
        if (snapshot.status !== 'active') return 'stopped';
        const value = snapshot.value;
        return typeof value === 'object' ? (value.running as ConnectionState) : 'stopped';
      };
      subscriber.next(toState());
      const sub = this.actor.subscribe({ next: () => subscriber.next(toState()), complete: () => subscriber.next('stopped') });
      return () => sub.unsubscribe();
    }).pipe(distinctUntilChanged());
    this.actor.start();
    this.subscription = options.source.subscribe({
      next: (input) => this.receive(input),
      error: (error: unknown) => this.report({ kind: 'stream-failed', message: errorMessage(error) }),
    });
  }

  /**
   * The verdict of an allocation: at once if known (or in the history), else when reached. Rejects
   * with AllocationNotJudgedError for an allocation no policy judges.
   */
  verdict(allocId: string): Promise<VerdictRecord> {
    // Watched again for a new deployment: what the history says is about the old one.
    const judging = this.tracked.has(allocId) || this.resolving.has(allocId);
    const known = judging ? undefined : this.history.get(allocId);
    if (known) return Promise.resolve(known);
    const unjudged = judging ? undefined : this.unwatched.get(allocId);
    if (unjudged !== undefined) return Promise.reject(new AllocationNotJudgedError(allocId, unjudged.reason));
    if (this.stopped) return Promise.reject(new SupervisorStoppedError(`the verdict of ${allocId}`));
    return new Promise((resolve, reject) => {
      this.verdictWaiters.set(allocId, [...(this.verdictWaiters.get(allocId) ?? []), { resolve, reject }]);
    });
  }

  /**
   * Resolves once the job version's deployment is judged as Nomad's deployment watcher would judge
   * it, from Warden's own verdicts (see deploymentWatch.ts): success when every allocation it wants
   * is healthy (replacements included), `awaitingPromotion` when its canaries are healthy and wait
   * for a manual promotion, or a failure that names the rule that ended it (`rule`) and lists each
   * unhealthy allocation with its per-task reasons (or the placement failure, or Nomad's reason for
   * ending the deployment). Rejects when the job cannot be read (a NomadError: not found,
   * unreachable) or is outside the scope (SupervisorScopeError).
   */
  async waitForDeployment(jobId: string, options: WaitForDeploymentOptions = {}): Promise<DeploymentResult> {
    const namespace = options.namespace ?? this.defaultNamespace();
    if (!this.scope.includes(namespace, jobId)) throw new SupervisorScopeError(namespace, jobId);
    const version = options.version ?? (await this.options.nomad.getJob(jobId, { namespace })).body.Version ?? 0;
    const job = await this.options.nomad.getJobVersion(jobId, version, { namespace }).catch(() => undefined);
    const unjudged = job && this.unjudgedReason(job);
    if (this.stopped) throw new SupervisorStoppedError(`the deployment of ${jobId}`);
    if (unjudged !== undefined) {
      return { ok: false, jobId, version, deploymentId: undefined, reason: `no deployment to judge: ${unjudged}`, rule: 'nothing-to-judge', unhealthy: [] };
    }
    const result = new Promise<DeploymentResult>((resolve, reject) => {
      // The progress deadline settles the watch on the clock, outside settleDeployments.
      const onSettled = (settled: DeploymentResult): void => {
        this.deploymentWaiters.delete(waiter);
        resolve(settled);
      };
      // Unknown until the version is registered: its groups are then taken as able to reschedule.
      const reschedulePolicies = Object.fromEntries((job?.TaskGroups ?? []).map((group) => [group.Name, group.ReschedulePolicy]));
      const watch = new DeploymentWatch(jobId, namespace, version, { clock: this.options.clock, failFast: options.failFast ?? false, onSettled, reschedulePolicies });
      const waiter: DeploymentWaiter = {
        watch,
        resolve,
        reject: (error) => {
          watch.close();
          reject(error);
        },
      };
      this.deploymentWaiters.add(waiter);
    });
    // It may settle (or the supervisor stop) while the seeding below is awaited: handled by the caller.
    result.catch(() => undefined);
    for (const record of this.history.values()) {
      if (record.alloc.jobId === jobId && record.alloc.namespace === namespace) this.feedVerdict(record);
    }
    // Restart safety: the deployment may have started (or ended) before we watched.
    try {
      const latest = await this.options.nomad.query<Deployment | null>(`/v1/job/${encodeURIComponent(jobId)}/deployment`, { namespace });
      if (latest.body) this.onDeployment(latest.body);
    } catch (error) {
      this.logger.warn('could not read the latest deployment', { jobId, error: errorMessage(error) });
    }
    return result;
  }

  /**
   * Why no group of the job version has a deployment Warden can judge (a batch job, no update
   * block, health set manually), or undefined when one has.
   */
  private unjudgedReason(job: Job): string | undefined {
    const reasons: string[] = [];
    for (const group of job.TaskGroups ?? []) {
      try {
        const judged = this.policyFor(job, group.Name, true);
        if ('policy' in judged) return undefined;
        reasons.push(judged.reason);
      } catch (error) {
        reasons.push(errorMessage(error));
      }
    }
    return reasons.length === 0 ? 'the job has no task groups' : reasons.join('; ');
  }

  /** Follows an evaluation (a child actor of the supervisor) to its outcome. */
  monitorEvaluation(evalId: string): Promise<EvaluationOutcome> {
    const running = this.evaluations.get(evalId);
    if (running) return running;
    if (this.stopped) return Promise.reject(new SupervisorStoppedError(`evaluation ${evalId}`));
    this.actor.send({ type: 'EVALUATION.MONITOR', evalId });
    const child = this.actor.system.get(evaluationActorId(evalId)) as AnyActorRef;
    // A child stopped with the supervisor completes without an output.
    const finished = (toPromise(child) as Promise<EvaluationOutcome | undefined>).then(
      (output) => output ?? Promise.reject(new SupervisorStoppedError(`evaluation ${evalId}`)),
    );
    const outcome = Promise.race([finished, this.stoppedSignal]).finally(() => this.evaluations.delete(evalId));
    this.evaluations.set(evalId, outcome);
    return outcome;
  }

  /**
   * Runs a command in an allocation as ExecClient.exec does (same options, same session), with this
   * supervisor's Nomad configuration, as a child actor of the supervisor: `exec:<sessionId>` among the
   * actor's children while it runs. `runCommand(supervisor, ...)` adds the execution options. stop()
   * ends every session (its exitCode rejects with SupervisorStoppedError); once stopped, exec throws it.
   */
  exec(allocId: string, options: ExecOptions): ExecSession {
    const stopped = (): SupervisorStoppedError => new SupervisorStoppedError(`an exec session in allocation ${allocId}`);
    return this.execSessions.open(allocId, options, {
      spawn: (session) => {
        if (this.stopped) throw stopped();
        this.actor.send({ type: 'EXEC.START', sessionId: session.sessionId, session });
        // Spawned and started during the send; its transport reports nothing before the send returns.
        return this.actor.system.get(execActorId(session.sessionId)) as ExecSessionActor;
      },
      stoppedError: stopped,
    });
  }

  /**
   * Runner-manager callbacks (Poseidon's semantics, see src/runners/allocationCallbacks.ts) for the
   * allocations in scope, from now on. Returns the function that ends them.
   */
  watchRunners(callbacks: AllocationCallbacks): () => void {
    return this.followAllocations(new RunnerAllocationTracker(callbacks, { clock: this.options.clock }));
  }

  /** Every allocation update in scope, as it arrives (the runner pools follow their runners so). Returns the function that ends it. */
  followAllocations(listener: { handle(allocation: Allocation): void }): () => void {
    this.runnerTrackers.add(listener);
    return () => this.runnerTrackers.delete(listener);
  }

  /** The cluster's client and the clock, for what is built on the supervisor (src/runners). */
  get nomad(): NomadClient {
    return this.options.nomad;
  }

  get clock(): Clock {
    return this.options.clock;
  }

  /** Ends every child and every allocation machine, closes the stream, and fails pending waits. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.subscription.unsubscribe();
    this.consulSubscription?.unsubscribe();
    this.checks.stop();
    for (const id of [...this.tracked.keys()]) this.registry.drop(id);
    this.tracked.clear();
    this.resolving.clear();
    this.rewatches.clear();
    this.runnerTrackers.clear();
    this.actor.send({ type: 'STOP' });
    this.actor.stop();
    const stopped = (what: string) => new SupervisorStoppedError(what);
    for (const [allocId, waiters] of this.verdictWaiters) for (const waiter of waiters) waiter.reject(stopped(`the verdict of ${allocId}`));
    this.verdictWaiters.clear();
    for (const waiter of this.deploymentWaiters) waiter.reject(stopped(`the deployment of ${waiter.watch.jobId}`));
    this.deploymentWaiters.clear();
    this.rejectStopped(stopped('an evaluation'));
    this.verdictSubject.complete();
    this.changeSubject.complete();
    this.problemSubject.complete();
    this.deploymentSubject.complete();
    if (this.options.ownsClient) await this.options.nomad.close();
    if (this.options.ownsConsul) await this.options.consul?.close();
  }

  /** Number of allocations with a live health machine. */
  get supervised(): number {
    return this.tracked.size;
  }

  /** The allocation if it is being judged now; undefined once its verdict is in. */
  supervisedAllocation(allocId: string): SupervisedAllocation | undefined {
    const tracked = this.tracked.get(allocId);
    const snapshot = this.registry.snapshot(allocId);
    if (!tracked || !snapshot) return undefined;
    return { alloc: tracked.ref, jobVersion: tracked.jobVersion, state: snapshot.value as AllocationHealthState, health: snapshot.context };
  }

  /** Every allocation being judged now. */
  supervisedAllocations(): SupervisedAllocation[] {
    return [...this.tracked.keys()].flatMap((id) => this.supervisedAllocation(id) ?? []);
  }

  private receive(input: SupervisorInput): void {
    if (this.stopped) return;
    switch (input.kind) {
      case 'allocation':
        return this.onAllocation(input.allocation);
      case 'evaluation':
        return this.onEvaluation(input.evaluation);
      case 'deployment':
        return this.onDeployment(input.deployment);
      case 'job':
        // A purge forgets the job's versions; its allocations end as their own updates say.
        return input.deleted === true ? this.jobs.forget(input.job.Namespace || 'default', input.job.ID) : this.jobs.remember(input.job);
      case 'connection':
        return this.onConnection(input);
      case 'problem':
        return this.report({ kind: input.problem, message: input.message, ...(input.index === undefined ? {} : { index: input.index }) });
    }
  }

  private onConnection(input: Extract<SupervisorInput, { kind: 'connection' }>): void {
    switch (input.state) {
      case 'connecting':
        return this.actor.send({ type: 'CONNECTION.CONNECTING' });
      case 'resyncing':
        return this.actor.send({ type: 'CONNECTION.RESYNCING' });
      case 'streaming':
        this.logger.info('event stream connected', { index: input.index });
        return this.actor.send({ type: 'CONNECTION.STREAMING', ...(input.index === undefined ? {} : { index: input.index }) });
      case 'backingOff':
        this.logger.warn('event stream connection lost; retrying', { attempt: input.attempt, retryInMs: input.retryInMs, reason: input.reason });
        return this.actor.send({
          type: 'CONNECTION.BACKING_OFF',
          attempt: input.attempt ?? 1,
          retryInMs: input.retryInMs ?? 0,
          reason: input.reason ?? 'connection lost',
        });
    }
  }

  private onAllocation(allocation: Allocation): void {
    const id = allocation.ID;
    if (typeof id !== 'string' || !this.scope.includes(allocation.Namespace, allocation.JobID)) return;
    for (const tracker of this.runnerTrackers) tracker.handle(allocation);
    const tracked = this.tracked.get(id);
    if (tracked && !movedFrom(tracked.ref.deploymentId, allocation)) {
      this.updateTracked(id, tracked, allocation);
      return;
    }
    const pending = this.resolving.get(id);
    if (pending) {
      if (movedFrom(deploymentOf(pending), allocation)) this.rewatches.set(id, allocation);
      this.resolving.set(id, allocation);
      return;
    }
    // Decided (judged or not) for the deployment it is in: nothing more to do.
    const judged = this.history.get(id);
    const unjudged = this.unwatched.get(id);
    if (judged && !movedFrom(judged.alloc.deploymentId, allocation)) return;
    if (unjudged && !movedFrom(unjudged.deploymentId, allocation)) return;
    if (!tracked && longFinished(allocation)) return;
    if (tracked || judged || unjudged) this.rewatch(id, allocation);
    this.resolve(id, allocation);
  }

  /**
   * health_hook.go Update: moved into another deployment, the allocation's health is cleared and it
   * is watched again, from that update, with its new job version's policy. The old machine goes; a
   * verdict it reached stays in the history (for the old deployment) until the new one replaces it.
   */
  private rewatch(id: string, allocation: Allocation): void {
    this.tracked.delete(id);
    this.registry.drop(id);
    this.checks.forget(id);
    // A retry after a failed job lookup keeps the update that did the moving.
    const moving = this.rewatches.get(id);
    if (moving === undefined || deploymentOf(moving) !== deploymentOf(allocation)) this.rewatches.set(id, allocation);
    this.logger.debug('allocation moved into another deployment; watching it again', { allocId: id, deploymentId: allocation.DeploymentID });
  }

  private resolve(id: string, allocation: Allocation): void {
    this.resolving.set(id, allocation);
    // Never watched before: it may have been moved in place before we started.
    const moved = this.rewatches.has(id) ? undefined : this.moves.movedBy(allocation);
    Promise.all([this.jobs.jobFor(allocation), moved]).then(
      ([job, movedBy]) => {
        if (movedBy && !this.rewatches.has(id)) this.rewatches.set(id, movedBy);
        this.startTracking(id, job, allocation);
      },
      (error: unknown) => {
        this.resolving.delete(id);
        const message = `allocation ${id}: ${errorMessage(error)}`;
        if (this.jobFailures.get(id) === message) return;
        this.jobFailures.set(id, message);
        this.report({ kind: 'job-unavailable', allocId: id, message });
      },
    );
  }

  private startTracking(id: string, job: Job, askedFor: Allocation): void {
    const allocation = this.resolving.get(id);
    if (!allocation || this.stopped) return;
    // Moved into another deployment while the job was looked up: it runs that deployment's version.
    if (deploymentOf(allocation) !== deploymentOf(askedFor)) return this.resolve(id, allocation);
    this.resolving.delete(id);
    const moving = this.rewatches.get(id);
    this.rewatches.delete(id);
    const rewatchedBy = moving && deploymentOf(moving) === deploymentOf(allocation) ? moving : undefined;
    try {
      const judged = this.policyFor(job, allocation.TaskGroup, !!allocation.DeploymentID);
      if ('reason' in judged) {
        this.unwatched.set(id, { reason: judged.reason, deploymentId: deploymentOf(allocation) });
        this.logger.debug('allocation not judged', { allocId: id, reason: judged.reason });
        for (const waiter of this.verdictWaiters.get(id) ?? []) waiter.reject(new AllocationNotJudgedError(id, judged.reason));
        this.verdictWaiters.delete(id);
        return;
      }
      const group = (job.TaskGroups ?? []).find((candidate) => candidate.Name === allocation.TaskGroup) as TaskGroup;
      const { view: observed, problems } = allocationView(allocation, group, rewatchedBy ? { rewatchedBy } : {});
      for (const problem of problems) this.logger.debug('allocation view', { allocId: id, problem });
      // A server clock ahead of ours cannot put the re-watch after we saw the update that moved it.
      const now = this.options.clock.now();
      const view = rewatchedBy && (observed.watchingSince ?? now) > now ? { ...observed, watchingSince: now } : observed;
      this.tracked.set(id, { ref: refOf(allocation), group, jobVersion: job.Version });
      const checks = checksRequired(judged.policy) ? this.checks.follow(id, allocation.Namespace, group) : undefined;
      this.registry.track(id, judged.policy, view, checks);
    } catch (error) {
      this.tracked.delete(id);
      this.checks.forget(id);
      this.report({ kind: 'bad-allocation', allocId: id, message: `allocation ${id}: ${errorMessage(error)}` });
    }
  }

  /**
   * How a group's allocations are judged, or why they are not. Nomad's client watches every
   * service/system allocation: with the update block in a deployment, else with the migrate block
   * (client/allocrunner/health_hook.go getHealthParams). Service checks come from Consul: without a
   * Consul source, judging a check-based group would call every allocation unhealthy at its
   * deadline, so such groups are left unjudged.
   */
  private policyFor(job: Job, group: string, inDeployment: boolean): { policy: HealthPolicy } | { reason: string } {
    const decision = healthPolicyFor(job, group, {
      deployment: inDeployment,
      migration: !inDeployment,
      ...(this.options.policy ? { optIn: this.options.policy } : {}),
    });
    if (!decision.watched) return { reason: decision.reason };
    if (checksRequired(decision.policy)) {
      const groupSpec = (job.TaskGroups ?? []).find((candidate) => candidate.Name === group);
      const missing = groupSpec && this.checks.unavailable(groupSpec);
      if (missing !== undefined) return { reason: `group ${group} is judged by its service checks (health_check = "checks"), which need ${missing}` };
    }
    return { policy: decision.policy };
  }

  private updateTracked(id: string, tracked: Tracked, allocation: Allocation): void {
    // The machine took its watching start when tracking began: updates need no estimate.
    const { view, problems } = allocationView(allocation, tracked.group, { estimateWatchingSince: false });
    for (const problem of problems) this.logger.debug('allocation view', { allocId: id, problem });
    this.registry.updateAllocation(id, view);
  }

  private onHealthChange(change: HealthChange): void {
    const tracked = this.tracked.get(change.allocationId);
    if (!tracked) return;
    if (change.type === 'transition') {
      this.changeSubject.next({ alloc: tracked.ref, from: change.from, to: change.to, at: change.at });
      return;
    }
    const record: VerdictRecord = { alloc: tracked.ref, outcome: change.outcome };
    this.tracked.delete(change.allocationId);
    this.registry.drop(change.allocationId);
    this.checks.forget(change.allocationId);
    this.history.set(change.allocationId, record);
    this.verdictSubject.next(record);
    for (const waiter of this.verdictWaiters.get(change.allocationId) ?? []) waiter.resolve(record);
    this.verdictWaiters.delete(change.allocationId);
    this.feedVerdict(record);
  }

  private feedVerdict(record: VerdictRecord): void {
    const { alloc } = record;
    this.settleDeployments((watch) =>
      watch.jobId === alloc.jobId && watch.namespace === alloc.namespace
        ? watch.onVerdict(alloc.allocId, alloc.deploymentId, alloc.name, record.outcome)
        : undefined,
    );
  }

  private onEvaluation(evaluation: Evaluation): void {
    // Evaluations monitored on request are followed whatever the scope; their children filter by ID.
    this.actor.send({ type: 'EVALUATION.UPDATED', evaluation });
    if (!isTerminalEvaluation(evaluation) || !this.scope.includes(evaluation.Namespace, evaluation.JobID)) return;
    const outcome = evaluationOutcome(evaluation, [evaluation.ID]);
    this.settleDeployments((watch) => (watch.jobId === evaluation.JobID ? watch.onEvaluation(outcome, evaluation.DeploymentID) : undefined));
  }

  private onDeployment(deployment: Deployment): void {
    this.jobs.rememberDeployment(deployment);
    if (this.scope.includes(deployment.Namespace, deployment.JobID)) this.deploymentSubject.next(deployment);
    this.settleDeployments((watch) => watch.onDeployment(deployment));
  }

  private settleDeployments(feed: (watch: DeploymentWatch) => DeploymentResult | undefined): void {
    for (const waiter of this.deploymentWaiters) {
      const result = feed(waiter.watch);
      if (!result) continue;
      this.deploymentWaiters.delete(waiter);
      waiter.resolve(result);
    }
  }

  private report(reported: SupervisorProblem): void {
    // The last guard where server text (an excerpt, an id, an error body) becomes a problem (src/secrets.ts).
    const problem = { ...reported, message: scrubSecrets(reported.message) };
    this.logger.warn(problem.message, { kind: problem.kind, ...(problem.index === undefined ? {} : { index: problem.index }) });
    this.problemSubject.next(problem);
  }

  private defaultNamespace(): string {
    const first = this.scope.namespaces[0];
    return first === undefined || first === '*' ? 'default' : first;
  }
}
