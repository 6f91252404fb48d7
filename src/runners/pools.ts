/**
 * Runner pools: Poseidon's environments and runners as actors of a supervisor. Each environment is
 * a child actor of the supervisor (machines/environment.ts); its runners are actors of their own
 * (machines/runner.ts, kept in a RunnerActorMap: as children, each claim would cost O(pool)); this
 * module gives them their Nomad writes, routes their allocations to them, reads the pools back from
 * a live cluster on start, and answers the API an HTTP layer sits on: environments (put, delete,
 * list), claims, runners.
 *
 *   const pools = createRunnerPools(supervisor);
 *   await pools.ready;                                   // the cluster's environments and runners recovered
 *   await pools.putEnvironment({ id: 7, prewarmingPoolSize: 3, driver: 'raw_exec' });
 *   const runner = pools.claim(7, { inactivityTimeoutS: 60 });  // at once, from the warm pool
 *   const execution = runner.execute({ command: 'echo hi', timeLimitS: 10 });
 */
import { randomUUID } from 'node:crypto';
import { Subject, type Observable } from 'rxjs';
import type { EvaluationOutcome } from '../../machines/evaluationOutcome.js';
import { backoffMs, environmentActorId, type EnvironmentActor, type EnvironmentContext } from '../../machines/environment.js';
import type { RunnerInput, StopReason } from '../../machines/runnerTypes.js';
import type { Allocation, Job } from '../nomad/types.js';
import type { Supervisor } from '../supervisor/supervisor.js';
import { errorMessage } from '../errorMessage.js';
import { driverProfile, POSEIDON_SETUSER } from './drivers.js';
import { NoIdleRunnerError, PoolsStoppedError, RunnerPoolError, RunnerStoppedError, UnknownEnvironmentError, UnknownRunnerError } from './errors.js';
import type { ExecutionSettings, RunningExecution } from './execution.js';
import { JobWrites } from './jobWrites.js';
import { PoolWrites } from './poolWrites.js';
import {
  checkEnvironmentSpec, environmentOfRunner, runnerJobId, runnerTemplateKey, specOfJob, templateJob, type EnvironmentSpec, type JobBuildOptions, type ResolvedEnvironmentSpec,
  type RunnerNetwork,
} from './poseidonFormat.js';
import { readClusterPools } from './recovery.js';
import { EvaluationFollowers } from './evaluationFollowers.js';
import { RunnerActorMap } from './runnerActors.js';
import { SerialQueues } from './serialQueues.js';
import { StrayRunners } from './strayRunners.js';
import { oneLine } from './taskTrouble.js';
import { runnerAllocation } from './runnerAllocation.js';
import { Runner, runnerInfo, runnerState, type RunnerActor, type RunnerHost, type RunnerInfo } from './runner.js';
import { UnprivilegedChecks, unprivilegedProblemText, type CheckedRunner, type UnprivilegedCheck } from './unprivilegedCheck.js';

export interface RunnerPoolsOptions {
  /** The shell that runs commands (`<shell> -c <command>`). Default /bin/bash, as Poseidon. */
  shell?: string;
  /**
   * argv prefix of unprivileged executions, for every driver. Default per driver (src/runners/drivers.ts):
   * Poseidon's `/sbin/setuser user` for docker, `setpriv` to nobody for exec and raw_exec.
   */
  setuser?: readonly string[];
  /** Check each environment's unprivileged executions on its first runner (default true; see unprivilegedCheck.ts). */
  checkUnprivileged?: boolean;
  /**
   * Where commands and relative file paths are, per driver. Default: the image's own for docker,
   * the task's directory (`$NOMAD_TASK_DIR`) for exec and raw_exec.
   */
  workingDirectory?: (spec: ResolvedEnvironmentSpec) => string | undefined;
  /** Where the stderr fifo of an execution under a terminal is made, in the runner (default /tmp, as Poseidon). */
  fifoDirectory?: string;
  /** Seconds between a timed-out command's SIGQUIT and the end of its session (default 3, Poseidon's). */
  executionGraceS?: number;
  /** Back-off of an environment whose runners fail to be placed or to start (defaults 1 s doubling to 60 s). */
  backoff?: { initialMs?: number; maxMs?: number };
  /** Runner job IDs (default `<environment>-<random uuid>`). */
  newRunnerId?: (environmentId: number) => string;
  /**
   * A template job of your own (Poseidon's server.templatejobfile, parsed): what an environment sets
   * is laid over it, the rest (constraints, policies, other groups) kept. Its datacenters are the
   * default of environments that name none. A function (parsing it by Nomad) is called as the pools
   * are recovered, and retried with the recovery until it resolves.
   */
  templateJob?: Job | (() => Promise<Job>);
  /** The network of runners with network access (Poseidon's nomad.network): mode and DNS. */
  network?: RunnerNetwork;
  /**
   * Never pull images again (Poseidon's nomad.disableforcepull). Otherwise the template and the
   * runners a PUT starts pull theirs (force_pull), so a re-PUT brings a new `:latest` image.
   */
  disableForcePull?: boolean;
}

/** What a fetch of the cluster's environments changed (Poseidon's `fetch`). */
export interface FetchedEnvironments {
  /** Environments someone else put on the cluster, now served. */
  adopted: number[];
  /** Environments whose template job someone else changed: taken as it is now. */
  refreshed: number[];
  /** Environments whose template job is gone from the cluster: their runners purged, no longer served. */
  removed: number[];
}

/** The first wait after a failed recovery, doubling up to the most. */
const RECOVERY_RETRY_MS = 1_000;
const RECOVERY_RETRY_MAX_MS = 30_000;

export type EnvironmentState = 'registering' | 'active' | 'updating' | 'deleting' | 'deleted' | 'failed';

/** An environment as the API and the inspector show it. */
export interface EnvironmentInfo extends EnvironmentSummary {
  runners: RunnerInfo[];
}

/** An environment without its runners: its spec, state and counts, read in constant time. */
export interface EnvironmentSummary {
  id: number;
  spec: ResolvedEnvironmentSpec;
  state: EnvironmentState;
  idleRunners: number;
  usedRunners: number;
  /** Registered, not running yet. */
  provisioningRunners: number;
  /** Waiting before it tries again after runners failed to be placed or to start. */
  backingOff: boolean;
  failures: number;
  lastError: string | null;
  /**
   * Why the pool has fewer idle runners than its size, in Nomad's words, when something is wrong:
   * the latest runner that could not be placed or started (while the environment backs off), or
   * the trouble of one that does not start (a driver failure, its task restarting). Null otherwise.
   */
  failure: string | null;
  /** Pending to running, of the latest runner that became idle (Poseidon's startup duration). */
  lastStartupMs: number | null;
  /** Whether unprivileged executions work in its runners (checked on the first runner of each template). */
  unprivileged: UnprivilegedCheck;
}

/** Poseidon's GET /statistics/execution-environments entry. */
export interface EnvironmentStatistics {
  id: number;
  prewarmingPoolSize: number;
  idleRunners: number;
  usedRunners: number;
}

export interface RunnerStartup {
  environmentId: number;
  /** From its allocation pending to running. */
  startupMs: number;
}

export interface PoolProblem {
  /**
   * orphan-runner: a runner job of no environment; unknown-runner: one of a known environment that
   * is not Warden's (both left alone); recreated-runner: one a write re-created after its purge (purged);
   * runner-failed: a runner could not be placed or started (Nomad's reason; the environment backs off);
   * unprivileged-unavailable: the unprivileged wrapper does not work in an environment's runners.
   */
  kind: 'orphan-runner' | 'unknown-runner' | 'recreated-runner' | 'runner-failed' | 'recovery-failed' | 'template-placement' | 'environment-failed' | 'unprivileged-unavailable';
  message: string;
  environmentId?: number;
  jobId?: string;
}

function environmentState(snapshot: ReturnType<EnvironmentActor['getSnapshot']>): EnvironmentState {
  if (snapshot.status === 'done') return snapshot.matches('failed') ? 'failed' : 'deleted';
  if (snapshot.status !== 'active') return 'deleted';
  if (snapshot.matches('deleting') || snapshot.matches('removingTemplate')) return 'deleting';
  if (snapshot.matches({ live: { template: 'updating' } })) return 'updating';
  if (snapshot.matches({ live: { template: 'registered' } })) return 'active';
  return 'registering';
}

export class RunnerPools {
  /**
   * Resolves once the cluster's environments and runners are recovered, which is retried until Nomad
   * answers (each failure a `recovery-failed` problem), or once the pools stop. Rejects never.
   */
  readonly ready: Promise<void>;
  /** An environment (or one of its runners) changed: its ID. */
  readonly changes$: Observable<number>;
  readonly problems$: Observable<PoolProblem>;
  /** A runner became idle: how long it took from pending to running (Poseidon's startup duration). */
  readonly startups$: Observable<RunnerStartup>;
  /** An evaluation of the pools' writes followed to its end (as the supervisor's own evaluation children end). */
  readonly evaluations$: Observable<EvaluationOutcome>;
  /** An environment's unprivileged check ended (a failure is also a problem). */
  readonly unprivilegedChecks$: Observable<{ environmentId: number; check: UnprivilegedCheck }>;

  private readonly changeSubject = new Subject<number>();
  private readonly problemSubject = new Subject<PoolProblem>();
  private readonly startupSubject = new Subject<RunnerStartup>();
  private readonly evaluationSubject = new Subject<EvaluationOutcome>();
  private readonly checkSubject = new Subject<{ environmentId: number; check: UnprivilegedCheck }>();
  private readonly checks: UnprivilegedChecks;
  private readonly writes: JobWrites;
  private readonly poolWrites: PoolWrites;
  private readonly environmentActors = new Map<number, EnvironmentActor>();
  private readonly runnerActors: RunnerActorMap;
  private readonly evaluations: EvaluationFollowers;
  private readonly strays: StrayRunners;
  private readonly running = new Map<string, Map<string, RunningExecution>>();
  /** Environment writes in order, one at a time per environment. */
  private readonly queues = new SerialQueues<number>();
  /** Allocation updates of runners without an actor yet, kept while recovering. */
  private readonly early = new Map<string, Allocation>();
  /** Runner jobs registered while the cluster was read: looked at once it is read. */
  private readonly earlyJobs = new Map<string, Job>();
  private readonly host: RunnerHost;
  private readonly unfollow: () => void;
  /** Cluster reads in progress (the recovery, fetches): allocation updates of runners not known yet are kept meanwhile. */
  private reading = 1;
  private stopped = false;
  private isRecovered = false;
  /** The custom template job, once read. */
  private baseTemplate: Job | undefined;
  private recoveryFailure: string | undefined;
  /** Ends the wait between two recovery attempts (the pools stopped). */
  private wake: (() => void) | undefined;
  private claimSeq = 0;
  private updateSeq = 0;

  constructor(
    private readonly supervisor: Supervisor,
    private readonly options: RunnerPoolsOptions = {},
  ) {
    this.changes$ = this.changeSubject.asObservable();
    this.problems$ = this.problemSubject.asObservable();
    this.startups$ = this.startupSubject.asObservable();
    this.evaluations$ = this.evaluationSubject.asObservable();
    this.unprivilegedChecks$ = this.checkSubject.asObservable();
    this.checks = new UnprivilegedChecks({
      target: supervisor,
      settings: (environmentId) => this.settings(environmentId),
      alive: (runnerId) => ['idle', 'used'].includes(runnerState(this.runnerActor(runnerId)?.getSnapshot())),
      checked: (environmentId, check) => {
        this.checkSubject.next({ environmentId, check });
        if (check.status === 'failed') this.report({ kind: 'unprivileged-unavailable', environmentId, message: unprivilegedProblemText(environmentId, check.reason) });
        this.changeSubject.next(environmentId);
      },
    });
    const inspect = supervisor.inspect ? { inspect: supervisor.inspect } : {};
    this.evaluations = new EvaluationFollowers({ nomad: supervisor.nomad, clock: supervisor.clock, ...inspect, ended: (outcome) => this.evaluationSubject.next(outcome) });
    this.writes = new JobWrites(supervisor.nomad, (evalId) => this.evaluations.follow(evalId));
    this.runnerActors = new RunnerActorMap({ clock: supervisor.clock, ...inspect });
    this.poolWrites = new PoolWrites(this.writes, {
      jobs: () => this.jobOptions(),
      report: (message) => this.report({ kind: 'template-placement', message }),
      endExecutions: (runnerId, reason) => this.endExecutions(runnerId, reason),
    });
    this.strays = new StrayRunners({
      writes: this.writes,
      poolWrites: this.poolWrites,
      known: (jobId) => this.runnerActors.get(jobId) !== undefined,
      environmentKnown: (id) => this.environmentActors.has(id),
      report: (problem) => this.report(problem),
    });
    this.host = {
      clock: supervisor.clock,
      target: supervisor,
      actor: (runnerId) => this.runnerActor(runnerId),
      settings: (environmentId) => this.settings(environmentId),
      executions: (runnerId) => this.executionsOf(runnerId),
      changed: (environmentId) => this.changeSubject.next(environmentId),
    };
    const unfollowAllocations = supervisor.followAllocations({ handle: (allocation) => this.route(allocation) });
    const unfollowEvaluations = supervisor.followEvaluations({ handle: (evaluation) => this.evaluations.update(evaluation) });
    const unfollowJobs = supervisor.followJobs({ handle: (job, deleted) => this.onJob(job, deleted) });
    const connection = supervisor.connection$.subscribe((state) => this.evaluations.streaming(state === 'streaming'));
    this.unfollow = () => {
      unfollowAllocations();
      unfollowEvaluations();
      unfollowJobs();
      connection.unsubscribe();
    };
    supervisor.actor.subscribe({ complete: () => this.shutDown() });
    this.ready = this.recover();
  }

  /** Whether the cluster's environments and runners have been read (ready has resolved). */
  get recovered(): boolean {
    return this.isRecovered;
  }

  /** Why the latest attempt to read the cluster failed, while the pools are not recovered yet and try again. */
  get recoveryError(): string | undefined {
    return this.recoveryFailure;
  }

  /** Every environment, with its runners. */
  environments(): EnvironmentInfo[] {
    return this.environmentIds().flatMap((id) => this.environment(id) ?? []);
  }

  /** Every environment, without its runners (what counts and specs need, at any pool size). */
  environmentSummaries(): EnvironmentSummary[] {
    return this.environmentIds().flatMap((id) => this.environmentSummary(id) ?? []);
  }

  environment(id: number): EnvironmentInfo | undefined {
    const summary = this.environmentSummary(id);
    if (summary === undefined) return undefined;
    const runners = this.environmentActors.get(id)!.getSnapshot().context.runners.flatMap((runnerId) => {
      const runner = this.runnerActor(runnerId);
      return runner ? [runnerInfo(runner.getSnapshot().context, runnerState(runner.getSnapshot()))] : [];
    });
    return { ...summary, runners };
  }

  environmentSummary(id: number): EnvironmentSummary | undefined {
    const actor = this.environmentActors.get(id);
    if (actor === undefined) return undefined;
    const snapshot = actor.getSnapshot();
    const { context } = snapshot;
    return {
      id,
      spec: context.spec,
      state: environmentState(snapshot),
      idleRunners: context.idle.length,
      usedRunners: context.used.length,
      provisioningRunners: context.provisioning.length,
      backingOff: snapshot.status === 'active' && snapshot.matches({ live: { pool: 'backingOff' } }),
      failures: context.failures,
      lastError: context.lastError ?? null,
      failure: this.failureOf(context),
      lastStartupMs: context.lastStartupMs ?? null,
      unprivileged: this.checks.state(id),
    };
  }

  private failureOf(context: EnvironmentContext): string | null {
    if (context.idle.length >= context.spec.prewarmingPoolSize) return null;
    if (context.failures > 0 && context.lastError !== undefined) return oneLine(context.lastError);
    for (const runnerId of context.provisioning) {
      const trouble = this.runnerActor(runnerId)?.getSnapshot().context.allocation?.trouble;
      if (trouble !== undefined) return `runner ${runnerId} does not start: ${trouble}`;
    }
    return null;
  }

  /** Poseidon's statistics: pool size, idle and used runners per environment. */
  statistics(): Record<string, EnvironmentStatistics> {
    return Object.fromEntries(
      this.environmentSummaries().map((e) => [String(e.id), { id: e.id, prewarmingPoolSize: e.spec.prewarmingPoolSize, idleRunners: e.idleRunners, usedRunners: e.usedRunners }]),
    );
  }

  /**
   * Creates the environment (its template job registered and placed, then its pool filled), or
   * updates it (the template written again; idle runners of an older template replaced, used ones
   * left alone). Resolves with whether it was created; rejects with InvalidEnvironmentError, a
   * NomadError, or PlacementFailedError (the template could not be placed: nothing is left of it).
   */
  async putEnvironment(spec: EnvironmentSpec): Promise<{ created: boolean }> {
    const base = this.baseTemplate?.Datacenters;
    const resolved = checkEnvironmentSpec(spec.datacenters === undefined && base != null && base.length > 0 ? { ...spec, datacenters: base } : spec);
    await this.ready;
    return this.queued(resolved.id, async () => {
      this.checkRunning('the environment was written');
      const existing = this.environmentActors.get(resolved.id);
      if (existing !== undefined && existing.getSnapshot().status === 'active') {
        if (environmentState(existing.getSnapshot()) === 'deleting') await this.until(existing, () => false);
        else return { created: false, ...(await this.update(existing, resolved)) };
      }
      await this.create(resolved);
      return { created: true };
    });
  }

  /** Deletes the environment: every runner (used ones too) and the template purged. False when unknown. */
  async deleteEnvironment(id: number): Promise<boolean> {
    await this.ready;
    return this.queued(id, async () => {
      const actor = this.environmentActors.get(id);
      if (actor === undefined || actor.getSnapshot().status !== 'active') return false;
      actor.send({ type: 'DELETE' });
      await this.until(actor, () => false);
      return true;
    });
  }

  /**
   * An idle runner of the environment, at once (no Nomad round trip: its used mark is written behind
   * the scenes, retried until Nomad takes it). Its inactivity timer starts now; 0 means none.
   * Throws UnknownEnvironmentError, or NoIdleRunnerError when the pool is empty right now.
   */
  claim(environmentId: number, options: { inactivityTimeoutS?: number } = {}): Runner {
    this.checkRunning('the claim');
    const actor = this.environmentActors.get(environmentId);
    if (actor === undefined || environmentState(actor.getSnapshot()) === 'deleting' || actor.getSnapshot().status !== 'active') {
      throw new UnknownEnvironmentError(environmentId);
    }
    const timeoutS = options.inactivityTimeoutS ?? 0;
    if (!(Number.isFinite(timeoutS) && timeoutS >= 0)) throw new RunnerPoolError(`inactivity timeout must be ≥ 0 seconds, not ${timeoutS}`);
    const claimId = ++this.claimSeq;
    actor.send({ type: 'CLAIM', claimId, timeoutMs: timeoutS * 1000, at: this.supervisor.clock.now() });
    const answer = actor.getSnapshot().context.claim;
    if (answer?.claimId !== claimId) throw new RunnerPoolError('the pool could not answer the claim: claim() was called while the pool was handling an event');
    if (answer.runnerId === undefined) throw new NoIdleRunnerError(environmentId, this.environmentSummary(environmentId)?.failure ?? undefined);
    return new Runner(this.host, answer.runnerId, environmentId);
  }

  /** A runner of any environment by its ID (undefined when there is none, or it is gone). */
  runner(runnerId: string): Runner | undefined {
    const environmentId = environmentOfRunner(runnerId);
    if (environmentId === undefined || this.runnerActor(runnerId) === undefined) return undefined;
    return new Runner(this.host, runnerId, environmentId);
  }

  /** Like runner(), throwing UnknownRunnerError. */
  requireRunner(runnerId: string): Runner {
    const runner = this.runner(runnerId);
    if (runner === undefined) throw new UnknownRunnerError(runnerId);
    return runner;
  }

  /**
   * Reads the cluster's environments again (Poseidon's `fetch`): environments whose template job
   * someone else wrote since (another Warden, a Poseidon, `nomad job run`) are adopted with their
   * runners, as a restart would recover them; known ones whose template someone else changed take
   * it as it is (idle runners of another template replaced); known ones whose template is gone are
   * removed, their runners purged. Environments being written right now are left to that write.
   * Rejects with the NomadError that stopped the reading.
   */
  async fetchEnvironments(): Promise<FetchedEnvironments> {
    await this.ready;
    this.checkRunning('the environments were fetched');
    this.reading += 1;
    const fetched: FetchedEnvironments = { adopted: [], refreshed: [], removed: [] };
    try {
      const found = await readClusterPools(this.supervisor.nomad, this.writes, () => this.supervisor.clock.now());
      this.checkRunning('the environments were fetched');
      const onCluster = new Set(found.environments.map((environment) => environment.spec.id));
      for (const environment of found.environments) {
        const { id } = environment.spec;
        if (this.queues.busy(id)) continue;
        const actor = this.environmentActors.get(id);
        if (actor === undefined) {
          this.spawnEnvironment(environment.spec, false, environment.runners);
          fetched.adopted.push(id);
        } else if (environmentState(actor.getSnapshot()) === 'active' && this.refresh(actor, environment.spec)) {
          fetched.refreshed.push(id);
        }
      }
      for (const [id, actor] of this.environmentActors) {
        if (onCluster.has(id) || this.queues.busy(id) || environmentState(actor.getSnapshot()) !== 'active') continue;
        actor.send({ type: 'FORGET' });
        fetched.removed.push(id);
      }
      void this.strays.purgeRecreated(found.recreated);
    } finally {
      this.doneReading();
    }
    return fetched;
  }

  /** Stops following the supervisor: the runners' actors stop where they are, executions end (the supervisor's stop does this too). */
  stop(): void {
    this.shutDown();
  }

  // ---------------------------------------------------------------------------------------------

  private environmentIds(): number[] {
    return [...this.environmentActors.keys()].sort((a, b) => a - b);
  }

  private async create(spec: ResolvedEnvironmentSpec): Promise<void> {
    const actor = this.spawnEnvironment(spec, true, []);
    await this.until(actor, (snapshot) => environmentState(snapshot) !== 'registering');
    const snapshot = actor.getSnapshot();
    if (snapshot.status !== 'active') {
      const message = snapshot.context.lastError ?? 'the environment could not be created';
      this.report({ kind: 'environment-failed', environmentId: spec.id, message });
      throw new RunnerPoolError(`environment ${spec.id}: ${message}`);
    }
  }

  /** Takes a template job someone else changed; false when it says what the environment says already. */
  private refresh(actor: EnvironmentActor, found: ResolvedEnvironmentSpec): boolean {
    const { spec, templateKey } = actor.getSnapshot().context;
    // What this environment's own template reads back as (a custom template adds what it sets).
    const own = specOfJob(templateJob(spec, this.jobOptions()), spec.id);
    const sameRunners = runnerTemplateKey(found) === runnerTemplateKey(own);
    if (sameRunners && found.prewarmingPoolSize === spec.prewarmingPoolSize) return false;
    actor.send({ type: 'REFRESH', spec: sameRunners ? { ...spec, prewarmingPoolSize: found.prewarmingPoolSize } : found, templateKey: sameRunners ? templateKey : runnerTemplateKey(found) });
    return true;
  }

  private jobOptions(): JobBuildOptions {
    const { network, disableForcePull } = this.options;
    const base = this.baseTemplate;
    return { ...(base === undefined ? {} : { base }), ...(network === undefined ? {} : { network }), ...(disableForcePull === undefined ? {} : { disableForcePull }) };
  }

  private async update(actor: EnvironmentActor, spec: ResolvedEnvironmentSpec): Promise<Record<string, never>> {
    const requestId = ++this.updateSeq;
    // A PUT pulls the image again (CodeOcean saves its environments to get a new `:latest`), unless pulls are off.
    actor.send({ type: 'UPDATE', requestId, spec, templateKey: runnerTemplateKey(spec), pull: this.options.disableForcePull !== true });
    await this.until(actor, (snapshot) => snapshot.context.update?.requestId === requestId);
    const error = actor.getSnapshot().context.update?.error;
    if (error !== undefined) throw new RunnerPoolError(`environment ${spec.id}: ${error}`);
    return {};
  }

  private spawnEnvironment(spec: ResolvedEnvironmentSpec, register: boolean, recovered: Omit<RunnerInput, 'io' | 'spec'>[]): EnvironmentActor {
    const newRunnerId = this.options.newRunnerId ?? ((id: number) => runnerJobId(id, randomUUID()));
    this.supervisor.actor.send({
      type: 'ENVIRONMENT.START',
      environmentId: spec.id,
      input: {
        spec,
        io: this.poolWrites,
        runnerActors: this.runnerActors,
        templateKey: runnerTemplateKey(spec),
        register,
        recovered: recovered.map((runner) => ({ ...runner, spec, io: this.poolWrites })),
        newRunnerId: () => newRunnerId(spec.id),
        ...(this.options.backoff ? { backoff: this.options.backoff } : {}),
      },
    });
    const actor = this.supervisor.actor.system.get(environmentActorId(spec.id)) as EnvironmentActor;
    this.environmentActors.set(spec.id, actor);
    let started = actor.getSnapshot().context.started;
    let failures = actor.getSnapshot().context.failures;
    actor.subscribe({
      next: ({ context }) => {
        // Each runner that failed to be placed or to start is said, with Nomad's reason and the back-off.
        if (context.failures > failures && context.lastError !== undefined) {
          this.report({ kind: 'runner-failed', environmentId: spec.id, message: `environment ${spec.id}: ${oneLine(context.lastError)}; trying again in ${backoffMs(context) / 1000} s` });
        }
        failures = context.failures;
        // One RUNNER.IDLE a step: each startup is seen once.
        if (context.started > started && context.lastStartupMs !== undefined) this.startupSubject.next({ environmentId: spec.id, startupMs: context.lastStartupMs });
        started = context.started;
        this.checkUnprivileged(spec.id, context);
        this.changeSubject.next(spec.id);
      },
      complete: () => {
        if (this.environmentActors.get(spec.id) === actor) {
          this.environmentActors.delete(spec.id);
          this.checks.forget(spec.id);
        }
        this.changeSubject.next(spec.id);
      },
      error: () => this.environmentActors.delete(spec.id),
    });
    this.checkUnprivileged(spec.id, actor.getSnapshot().context);
    return actor;
  }

  /** Resolves once the actor's snapshot satisfies `done`, or it is no longer active. */
  private until(actor: EnvironmentActor, done: (snapshot: ReturnType<EnvironmentActor['getSnapshot']>) => boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        const snapshot = actor.getSnapshot();
        if (this.stopped && snapshot.status === 'stopped') {
          reject(new PoolsStoppedError('the environment was written'));
          return true;
        }
        if (snapshot.status !== 'active' || done(snapshot)) {
          resolve();
          return true;
        }
        return false;
      };
      if (check()) return;
      const subscription = actor.subscribe({
        next: () => void (check() && subscription.unsubscribe()),
        complete: () => void (check() && subscription.unsubscribe()),
        error: () => void (check() && subscription.unsubscribe()),
      });
    });
  }

  private queued<T>(id: number, work: () => Promise<T>): Promise<T> {
    return this.queues.run(id, work);
  }

  /**
   * Reads the cluster's pools, again and again until Nomad answers (as Poseidon's
   * KeepEnvironmentsSynced retries its load): each failure is reported with the wait before the
   * next attempt, 1 s doubling to 30 s on the clock.
   */
  private async recover(): Promise<void> {
    try {
      let found: Awaited<ReturnType<typeof readClusterPools>> | undefined;
      for (let attempt = 1; found === undefined; attempt++) {
        try {
          const { templateJob: base } = this.options;
          if (this.baseTemplate === undefined && base !== undefined) this.baseTemplate = typeof base === 'function' ? await base() : base;
          found = await readClusterPools(this.supervisor.nomad, this.writes, () => this.supervisor.clock.now());
        } catch (error) {
          if (this.stopped) return;
          const waitMs = Math.min(RECOVERY_RETRY_MAX_MS, RECOVERY_RETRY_MS * 2 ** (attempt - 1));
          this.recoveryFailure = errorMessage(error);
          this.report({ kind: 'recovery-failed', message: `the runner pools could not be read from the cluster: ${this.recoveryFailure}; retrying in ${waitMs / 1000} s (attempt ${attempt})` });
          await this.pause(waitMs);
          if (this.stopped) return;
        }
      }
      this.recoveryFailure = undefined;
      this.isRecovered = true;
      if (this.stopped) return;
      for (const orphan of found.orphans) {
        this.report({ kind: 'orphan-runner', jobId: orphan, message: `runner job ${orphan} belongs to no environment on the cluster; left alone` });
      }
      for (const environment of found.environments) this.spawnEnvironment(environment.spec, false, environment.runners);
      void this.strays.purgeRecreated(found.recreated);
    } finally {
      this.doneReading();
    }
  }

  /** Waits on the clock; cut short when the pools stop. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = this.supervisor.clock.setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        this.supervisor.clock.clearTimeout(timer);
        resolve();
      };
    });
  }

  private doneReading(): void {
    this.reading -= 1;
    if (this.reading > 0) return;
    // Updates that came while the cluster was read, for runners found in it.
    const early = [...this.early.values()];
    this.early.clear();
    for (const allocation of early) this.route(allocation);
    const jobs = [...this.earlyJobs.values()];
    this.earlyJobs.clear();
    for (const job of jobs) this.onJob(job, false);
  }

  /** A runner job registered that no runner of the pools stands for: see StrayRunners. */
  private onJob(job: Job, deleted: boolean): void {
    const namespace = this.supervisor.nomad.config.namespace ?? 'default';
    if (deleted || this.stopped || (job.Namespace || 'default') !== namespace || environmentOfRunner(job.ID) === undefined) return;
    if (this.reading > 0) this.earlyJobs.set(job.ID, job);
    else void this.strays.examine(job);
  }

  /** A runner's allocation update goes to its actor (kept for later while recovering). */
  private route(allocation: Allocation): void {
    const namespace = this.supervisor.nomad.config.namespace ?? 'default';
    if ((allocation.Namespace || 'default') !== namespace || environmentOfRunner(allocation.JobID) === undefined) return;
    const actor = this.runnerActor(allocation.JobID);
    if (actor === undefined) {
      if (this.reading > 0) this.early.set(allocation.JobID, allocation);
      return;
    }
    actor.send({ type: 'ALLOCATION.UPDATED', allocation: runnerAllocation(allocation, this.supervisor.clock.now()) });
  }

  private runnerActor(runnerId: string): RunnerActor | undefined {
    if (this.stopped) return undefined;
    const actor = this.runnerActors.get(runnerId);
    return actor?.getSnapshot().status === 'active' ? actor : undefined;
  }

  private executionsOf(runnerId: string): Map<string, RunningExecution> {
    let executions = this.running.get(runnerId);
    if (executions === undefined) {
      executions = new Map();
      this.running.set(runnerId, executions);
    }
    return executions;
  }

  private endExecutions(runnerId: string, reason: StopReason): void {
    const executions = this.running.get(runnerId);
    this.running.delete(runnerId);
    for (const execution of executions?.values() ?? []) {
      execution.end(reason.kind === 'inactivity' ? { status: 'timeout', reason: 'inactivity' } : { status: 'failed', error: new RunnerStoppedError(runnerId, reason) });
    }
  }

  /** Checks the environment's unprivileged executions on an idle runner, when its template has not been (see unprivilegedCheck.ts). */
  private checkUnprivileged(environmentId: number, context: EnvironmentContext): void {
    if (this.options.checkUnprivileged === false || context.idle.length === 0) return;
    const idle = context.idle.flatMap((runnerId): CheckedRunner[] => {
      const allocId = this.runnerActor(runnerId)?.getSnapshot().context.allocation?.allocId;
      return allocId === undefined ? [] : [{ runnerId, allocId }];
    });
    this.checks.consider(environmentId, context.templateKey, idle);
  }

  private settings(environmentId: number): ExecutionSettings {
    const spec = this.environmentActors.get(environmentId)?.getSnapshot().context.spec;
    const profile = spec === undefined ? undefined : driverProfile(spec.driver);
    return {
      shell: this.options.shell ?? '/bin/bash',
      setuser: this.options.setuser ?? profile?.setuser ?? POSEIDON_SETUSER,
      workingDirectory: spec && this.options.workingDirectory ? this.options.workingDirectory(spec) : profile?.workingDirectory,
      keptEnvironment: profile?.keptEnvironment,
      hostFilesystem: profile?.hostFilesystem ?? false,
      unprivilegedProblem: this.checks.problem(environmentId),
      graceMs: (this.options.executionGraceS ?? 3) * 1000,
      ...(this.options.fifoDirectory === undefined ? {} : { fifoDirectory: this.options.fifoDirectory }),
    };
  }

  private report(problem: PoolProblem): void {
    this.problemSubject.next(problem);
  }

  private checkRunning(what: string): void {
    if (this.stopped) throw new PoolsStoppedError(what);
  }

  private shutDown(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.wake?.();
    this.unfollow();
    // The environments stopped with the supervisor; their runners and writes' evaluations stop with them, as they are.
    this.runnerActors.stopAll();
    this.evaluations.stop();
    this.checks.stop();
    for (const runnerId of [...this.running.keys()]) this.endExecutions(runnerId, { kind: 'destroyed', message: 'the supervisor stopped', failure: false });
    this.changeSubject.complete();
    this.problemSubject.complete();
    this.startupSubject.complete();
    this.evaluationSubject.complete();
    this.checkSubject.complete();
  }
}

/** The runner pools of a supervisor (one per supervisor): recovered from the cluster, then kept. */
export function createRunnerPools(supervisor: Supervisor, options: RunnerPoolsOptions = {}): RunnerPools {
  return new RunnerPools(supervisor, options);
}

export type { EnvironmentContext };
