import { Observable, Subject, distinctUntilChanged, type Subscription } from 'rxjs';
import { createActor, toPromise, type Actor, type AnyActorRef } from 'xstate';
import type { EvaluationOutcome } from '../../machines/evaluationOutcome.js';
import { evaluationActorId, execActorId, supervisorMachine } from '../../machines/supervisor.js';
import type { Allocation, Deployment, Evaluation, Job } from '../nomad/types.js';
import { evaluationMachineOver } from './evaluationReads.js';
import type { CheckView } from '../../machines/allocationHealthTypes.js';
import type { NomadClient } from '../nomad/client.js';
import type { Clock } from '../clock/index.js';
import type { HealthRegistry } from '../health/registry.js';
import type { InspectionObserver } from '../health/inspection.js';
import { ClockHorizon } from '../health/horizon.js';
import { FreshnessHorizon, type FreshnessOptions } from '../intake/freshness.js';
import type { OptInHealthPolicy } from '../health/policy.js';
import { ConsulCheckFanOut } from '../consul/checkFanOut.js';
import { AllocationIntake, type SupervisedAllocation } from '../intake/allocationIntake.js';
import type { ConsulClient } from '../consul/client.js';
import { NomadCheckPoller } from '../nomadChecks/checkPoller.js';
import { ServiceCheckSources } from '../nomadChecks/checkSources.js';
import { JobCache } from '../streams/jobCache.js';
import { RunnerAllocationTracker, type AllocationCallbacks } from '../runners/allocationCallbacks.js';
import { ExecSessions, type ExecOptions, type ExecSession, type ExecSessionActor, type ExecTarget } from '../exec/sessions.js';
import type { DeploymentResult } from '../deployments/deploymentWatch.js';
import { DeploymentGates, type WaitForDeploymentOptions } from '../deployments/deploymentGates.js';
import { eachInput, type SupervisorInput, type SupervisorInputs } from './inputs.js';
import { silentLogger, structuredLogger, type LogSink, type Logger } from '../logger.js';
import { resolveScope, type ResolvedScope, type SupervisorScope } from '../intake/scope.js';
import type { ConnectionState, StateChange, SupervisorProblem, VerdictRecord } from './types.js';
import { SupervisorScopeError, SupervisorStoppedError } from '../intake/errors.js';
import { ClusterRelease } from '../intake/clusterRelease.js';
import { NodeCache } from '../intake/nodeCache.js';
import { errorMessage } from '../errorMessage.js';
import { scrubSecrets } from '../secrets.js';

export interface SupervisorRuntimeOptions {
  /** The cluster's client: job, deployment and evaluation reads. */
  nomad: NomadClient;
  clock: Clock;
  /** Cluster updates, in order, one at a time or a batch at once: the event stream (nomadSource.ts) or any other source. */
  source: Observable<SupervisorInputs>;
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
  /**
   * How a verdict that only time reaches waits until nothing earlier can still be on its way
   * (src/intake/freshness.ts): the settle window's floor and the event stream's namespace. Without
   * it, time passes at the clock's pace (a source that delivers everything at once).
   */
  freshness?: Pick<FreshnessOptions, 'namespace' | 'settleMs' | 'maxSettleMs' | 'lagMemoryMs' | 'random'>;
  /**
   * The cluster's Nomad release ("1.6.3"), whose rules judge its allocations. Default: asked of the
   * cluster (GET /v1/agent/self, else /v1/agent/members or /v1/nodes), again after every reconnect.
   */
  nomadVersion?: string;
}

export type { WaitForDeploymentOptions } from '../deployments/deploymentGates.js';
export type { SupervisedAllocation } from '../intake/allocationIntake.js';

/**
 * The supervisor at work: a router. Allocation updates go to the intake (src/intake: scope, job,
 * policy, history, one health machine each), deployments to the deploy gates waiting on them,
 * evaluations and exec sessions to the supervisor actor's children; it answers the embedding API.
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

  private readonly problemSubject = new Subject<SupervisorProblem>();
  private readonly deploymentSubject = new Subject<Deployment>();
  private readonly registry: HealthRegistry;
  private readonly intake: AllocationIntake;
  private readonly deployments: DeploymentGates;
  /** When time may pass for the machines: the settle window and the stream's progress. */
  private readonly freshness: FreshnessHorizon | undefined;
  private readonly jobs: JobCache;
  /** The cluster's Nomad release, whose rules judge its allocations. */
  private readonly release: ClusterRelease;
  private readonly scope: ResolvedScope;
  private readonly logger: Logger;
  private readonly evaluations = new Map<string, Promise<EvaluationOutcome>>();
  /** Followers of every allocation update in scope: runner-manager callbacks, the runner pools. */
  private readonly runnerTrackers = new Set<{ handle(allocation: Allocation): void }>();
  /** Followers of every evaluation update: the runner pools' own evaluation followers. */
  private readonly evaluationListeners = new Set<{ handle(evaluation: Evaluation): void }>();
  /** Followers of the job events in scope: the runner pools look for runner jobs they do not know. */
  private readonly jobListeners = new Set<{ handle(job: Job, deleted: boolean): void }>();
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
  /**
   * Whether the source has delivered the cluster as it is: false from its first `connecting` until
   * its first `streaming` (the event stream lists the allocations in between). A source that reports
   * no connection is taken as caught up.
   */
  private caughtUp = true;
  private streamed = false;
  /** The stream was lost since it last streamed: the next `streaming` is a reconnect. */
  private lostStream = false;

  constructor(private readonly options: SupervisorRuntimeOptions) {
    const { nomad, clock, inspect } = options;
    this.scope = resolveScope(options.scope);
    this.logger = structuredLogger(options.logger ?? silentLogger);
    this.problems$ = this.problemSubject.asObservable();
    this.deployments$ = this.deploymentSubject.asObservable();
    this.jobs = new JobCache(nomad, { clock });
    this.release = new ClusterRelease({
      nomad,
      clock,
      random: options.freshness?.random,
      logger: this.logger,
      version: options.nomadVersion,
      warn: (message) => this.report({ kind: 'nomad-version', message }),
    });
    this.stoppedSignal = new Promise<never>((_, reject) => {
      this.rejectStopped = reject;
    });
    this.stoppedSignal.catch(() => undefined);
    this.freshness =
      options.freshness &&
      new FreshnessHorizon({ ...options.freshness, clock, nomad, logger: this.logger, deliver: (allocation) => this.onAllocation(allocation) });
    this.consul = options.consul && new ConsulCheckFanOut((id, checks, seenAt) => this.registry.updateChecks(id, checks, { sampled: true, ...(seenAt === undefined ? {} : { seenAt }) }));
    const listener = (id: string, checks: readonly CheckView[]): boolean => this.registry.updateChecks(id, checks);
    const waiting = (id: string): boolean => this.registry.status(id)?.state !== 'pending';
    const onError = (id: string, error: unknown): void => this.logger.debug("reading Nomad's checks failed; retrying", { allocId: id, error: errorMessage(error) });
    this.checks = new ServiceCheckSources(new NomadCheckPoller(nomad, { clock, listener, waiting, onError }), this.consul);
    this.intake = new AllocationIntake({
      nomad,
      clock,
      health: { clock, horizon: this.freshness ?? new ClockHorizon(clock), ...(inspect ? { inspect } : {}) },
      jobs: this.jobs,
      scope: this.scope,
      release: this.release,
      nodes: new NodeCache(nomad),
      policy: options.policy,
      checks: this.checks,
      logger: this.logger,
      historySize: options.historySize ?? 10_000,
      noteLag: this.freshness && ((ms) => this.freshness?.noteLag(ms)),
      onSettled: () => this.deployments.recheck(),
      report: (problem) => this.report(problem),
    });
    this.registry = this.intake.registry;
    this.verdicts$ = this.intake.verdicts$;
    this.changes$ = this.intake.changes$;
    this.deployments = new DeploymentGates({
      nomad,
      clock,
      logger: this.logger,
      verdicts: () => this.intake.records(),
      unjudged: () => this.intake.unjudgedRecords(),
      undecided: (deploymentId) => this.intake.undecidedIn(deploymentId),
      stillJudged: (deploymentId) => this.intake.stillJudgedIn(deploymentId),
      caughtUp: () => this.caughtUp,
      rules: () => this.release.rules,
    });
    this.intake.verdicts$.subscribe((record) => this.deployments.onVerdict(record));
    this.intake.unjudged$.subscribe((record) => this.deployments.onUnjudged(record));
    this.consulSubscription = options.consul
      ?.watchHealthChecks({
        onError: (error) => this.report({ kind: 'consul-unavailable', message: `Consul health query failed; retrying: ${error.message}` }),
      })
      .subscribe({
        next: (update) => this.consul?.update(update.checks, update.receivedAt),
        error: (error: unknown) => this.report({ kind: 'consul-unavailable', message: `Consul health watch ended: ${errorMessage(error)}` }),
      });
    this.execSessions = new ExecSessions(nomad.config, { clock });
    this.actor = createActor(
      supervisorMachine.provide({
        actors: { evaluation: evaluationMachineOver(nomad), execSession: this.execSessions.machine },
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
      next: (inputs) => {
        for (const input of eachInput(inputs)) this.receive(input);
      },
      error: (error: unknown) => this.report({ kind: 'stream-failed', message: errorMessage(error) }),
    });
  }

  /**
   * The verdict of an allocation: at once if known (or in the history), else when reached. Rejects
   * with AllocationNotJudgedError for an allocation no policy judges.
   */
  verdict(allocId: string): Promise<VerdictRecord> {
    return this.intake.verdict(allocId);
  }

  /**
   * Resolves once the job version's deployment has ended as Nomad's own deployment says (see
   * src/deployments/deploymentWatch.ts), and Warden has judged its allocations: success,
   * `awaitingPromotion` when its canaries are healthy and wait for a manual promotion, or a failure
   * with Nomad's reason and the rule that ended it (`rule`), listing each allocation Warden judged
   * unhealthy with its per-task reasons. With `failFast`, the first unhealthy allocation (or a group
   * that cannot be placed) ends it at once. Rejects when the job cannot be read (a NomadError: not
   * found, unreachable) or is outside the scope (SupervisorScopeError).
   */
  async waitForDeployment(jobId: string, options: WaitForDeploymentOptions = {}): Promise<DeploymentResult> {
    const namespace = options.namespace ?? this.defaultNamespace();
    if (!this.scope.includes(namespace, jobId)) throw new SupervisorScopeError(namespace, jobId);
    if (this.stopped) throw new SupervisorStoppedError(`the deployment of ${jobId}`);
    return this.deployments.wait(jobId, namespace, options);
  }

  /** What each waitForDeployment under way still waits for, in a few words (see DeploymentWatch.waitingFor). */
  deploymentWaits(): { jobId: string; namespace: string; version: number; waitingFor: string }[] {
    return this.deployments.waiting();
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

  /** Every evaluation update, as it arrives, whatever the scope (the runner pools follow their writes' evaluations so). Returns the function that ends it. */
  followEvaluations(listener: { handle(evaluation: Evaluation): void }): () => void {
    this.evaluationListeners.add(listener);
    return () => this.evaluationListeners.delete(listener);
  }

  /** Every job event in scope (`deleted`: a purge), as it arrives. Returns the function that ends it. */
  followJobs(listener: { handle(job: Job, deleted: boolean): void }): () => void {
    this.jobListeners.add(listener);
    return () => this.jobListeners.delete(listener);
  }

  /** The cluster's client and the clock, for what is built on the supervisor (src/runners). */
  get nomad(): NomadClient {
    return this.options.nomad;
  }

  get clock(): Clock {
    return this.options.clock;
  }

  /** The inspection observer it was given: what is built on it (src/runners) inspects its own root actors with it. */
  get inspect(): InspectionObserver | undefined {
    return this.options.inspect;
  }

  /** Ends every child and every allocation machine, closes the stream, and fails pending waits. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.subscription.unsubscribe();
    this.consulSubscription?.unsubscribe();
    this.checks.stop();
    this.release.close();
    this.intake.stop();
    this.freshness?.close();
    this.runnerTrackers.clear();
    this.evaluationListeners.clear();
    this.jobListeners.clear();
    this.actor.send({ type: 'STOP' });
    this.actor.stop();
    const stopped = (what: string) => new SupervisorStoppedError(what);
    this.deployments.stop();
    this.rejectStopped(stopped('an evaluation'));
    this.problemSubject.complete();
    this.deploymentSubject.complete();
    if (this.options.ownsClient) await this.options.nomad.close();
    if (this.options.ownsConsul) await this.options.consul?.close();
  }

  /** Number of allocations with a live health machine. */
  get supervised(): number {
    return this.intake.supervised;
  }

  /** The allocation if it is being judged now; undefined once its verdict is in. */
  supervisedAllocation(allocId: string): SupervisedAllocation | undefined {
    return this.intake.supervisedAllocation(allocId);
  }

  /** Every allocation being judged now. */
  supervisedAllocations(): SupervisedAllocation[] {
    return this.intake.supervisedAllocations();
  }

  private receive(input: SupervisorInput): void {
    if (this.stopped) return;
    if ('index' in input && input.index !== undefined && input.kind !== 'problem') this.freshness?.noteDelivered(input.index);
    switch (input.kind) {
      case 'allocation':
        return this.onAllocation(input.allocation, input.resync !== true);
      case 'evaluation':
        return this.onEvaluation(input.evaluation);
      case 'deployment':
        return this.onDeployment(input.deployment);
      case 'job':
        return this.onJob(input.job, input.deleted === true);
      case 'connection':
        return this.onConnection(input);
      case 'problem':
        return this.report({ kind: input.problem, message: input.message, ...(input.index === undefined ? {} : { index: input.index }) });
    }
  }

  private onConnection(input: Extract<SupervisorInput, { kind: 'connection' }>): void {
    this.freshness?.noteStreaming(input.state === 'streaming');
    // A reconnect: the cluster may have been upgraded meanwhile.
    if (input.state === 'backingOff') this.lostStream = true;
    else if (input.state === 'streaming' && this.lostStream) {
      this.lostStream = false;
      void this.release.refresh();
    }
    if (!this.streamed && input.state === 'streaming') {
      this.streamed = this.caughtUp = true;
      this.deployments.recheck();
    } else if (!this.streamed) this.caughtUp = false;
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

  private onAllocation(allocation: Allocation, live = false): void {
    if (typeof allocation.ID !== 'string' || !this.scope.includes(allocation.Namespace, allocation.JobID)) return;
    for (const tracker of this.runnerTrackers) tracker.handle(allocation);
    this.intake.receive(allocation, live);
  }

  private onJob(job: Job, deleted: boolean): void {
    // A purge forgets the job's versions; its allocations end as their own updates say.
    if (deleted) this.jobs.forget(job.Namespace || 'default', job.ID);
    else this.jobs.remember(job);
    if (this.scope.includes(job.Namespace, job.ID)) for (const listener of this.jobListeners) listener.handle(job, deleted);
  }

  private onEvaluation(evaluation: Evaluation): void {
    // Evaluations monitored on request are followed whatever the scope; their children filter by ID.
    // The actor steps only while it follows some: most of a cluster's evaluations concern none.
    if (this.actor.getSnapshot().context.evaluations.length > 0) this.actor.send({ type: 'EVALUATION.UPDATED', evaluation });
    for (const listener of this.evaluationListeners) listener.handle(evaluation);
    if (this.scope.includes(evaluation.Namespace, evaluation.JobID)) this.deployments.onEvaluation(evaluation);
  }

  private onDeployment(deployment: Deployment): void {
    this.jobs.rememberDeployment(deployment);
    if (this.scope.includes(deployment.Namespace, deployment.JobID)) this.deploymentSubject.next(deployment);
    this.deployments.onDeployment(deployment);
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
