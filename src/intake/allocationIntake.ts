/**
 * How an allocation enters Warden: scope → job → policy → history → machine.
 *
 * - Scope: only the namespaces and job prefixes asked for.
 * - Job: allocation events do not carry the job; the job cache looks the version up once.
 * - Policy: how Nomad's client watches the group (judgement.ts), or why it does not.
 * - History: however the allocation reaches us (the stream, a listing after a reconnect, a late
 *   start), it is judged from its own history (src/health/allocationHistory.ts), as if watched from
 *   its first event: the same verdict, at the same time, with the same reasons.
 * - Machine: one stored health machine per allocation in the registry, fed at the data's times;
 *   time passes for it only as far as the Horizon knows nothing earlier is still on its way.
 *
 * An allocation moved into another deployment by an in-place update is watched again from that
 * update, with its new job version's policy (health_hook.go Update). Every per-allocation memory is
 * bounded: machines live only until their verdict, the rest is kept in bounded histories.
 *
 * Rules: those of the cluster's Nomad release (clusterRelease.ts), known before the first admission.
 * A group whose check names use variables gets one policy per allocation, its names interpolated
 * with that allocation's environment (and its node's record, read once per node, when they need it).
 * An allocation whose client comes back after a disconnect (ClientStatus unknown, then not) is
 * judged again from the history its client reports, as if first seen then: nothing that time alone
 * decides was said while it was away.
 */
import { Subject, type Observable } from 'rxjs';
import { checksRequired } from '../../machines/allocationHealthRules.js';
import type { AllocationHealthContext, HealthPolicy } from '../../machines/allocationHealthTypes.js';
import type { NomadRules } from '../../machines/nomadRules.js';
import type { AllocationHealthState } from '../../machines/allocationHealth.js';
import type { Clock, TimerHandle } from '../clock/index.js';
import type { ServiceCheckSources } from '../nomadChecks/checkSources.js';
import { allocationPolicy, type OptInHealthPolicy } from '../health/policy.js';
import { taskEnvironments } from '../health/taskEnvironment.js';
import { judgeSight } from '../health/historyFeed.js';
import { nomadDecision, type NomadDecision } from '../health/nomadDecision.js';
import { parseNanoTime } from '../health/nomadTime.js';
import { HealthRegistry, type HealthChange, type HealthRegistryOptions } from '../health/registry.js';
import type { NomadClient } from '../nomad/client.js';
import type { Allocation, Job, TaskGroup } from '../nomad/types.js';
import type { JobCache } from '../streams/jobCache.js';
import { BoundedHistory } from '../boundedHistory.js';
import { InPlaceMoves, type MovingUpdate } from './inPlaceMoves.js';
import { AdmittedRecords, type Admitted } from './admittedRecords.js';
import type { Logger } from '../logger.js';
import type { ResolvedScope } from './scope.js';
import { AllocationNotJudgedError, SupervisorStoppedError } from './errors.js';
import { errorMessage } from '../errorMessage.js';
import { judgementOf, type Judgement } from './judgement.js';
import type { AllocationRef, StateChange, VerdictOutcome, VerdictRecord } from './types.js';
import { VerdictBook, type Unjudged } from './verdictBook.js';
import type { ClusterRelease } from './clusterRelease.js';
import type { NodeCache } from './nodeCache.js';

export interface AllocationIntakeOptions {
  readonly nomad: Pick<NomadClient, 'getDeployment'>;
  readonly clock: Clock;
  /** The health registry's clock, horizon and inspector: the intake keeps its machines on its own records. */
  readonly health: Omit<HealthRegistryOptions, 'machines'>;
  readonly jobs: JobCache;
  readonly scope: ResolvedScope;
  /** The cluster's Nomad release: the rules allocations are admitted with. */
  readonly release: Pick<ClusterRelease, 'rules' | 'whenKnown'>;
  /** Client nodes, for check names that use their records. */
  readonly nodes: Pick<NodeCache, 'cached' | 'read'>;
  /** Judge allocations Nomad does not watch (batch, system, no update block) with this policy. */
  readonly policy?: OptInHealthPolicy | undefined;
  /** Where allocations judged by their service checks get them (Consul's, or Nomad's own). */
  readonly checks: ServiceCheckSources;
  readonly logger: Logger;
  /** Verdicts (and reasons for not judging) kept once an allocation is decided. */
  readonly historySize: number;
  /** An allocation stopped being undecided without a verdict (its job was looked up, it awaits its client...): see undecidedIn. */
  readonly onSettled?: (() => void) | undefined;
  /** How long after it happened a live update arrived (for the settle window: freshness.ts). */
  readonly noteLag?: ((ms: number) => void) | undefined;
  /** Something could not be used (an allocation's job, a malformed allocation): reported, not thrown. */
  readonly report: (problem: { kind: 'job-unavailable' | 'bad-allocation' | 'nomad-disagrees'; allocId: string; message: string }) => void;
}

/** One allocation being judged, as its health machine sees it now (read-only, for the inspector). */
export interface SupervisedAllocation {
  readonly alloc: AllocationRef;
  /** The version of the job the allocation runs. */
  readonly jobVersion: number | undefined;
  readonly state: AllocationHealthState;
  readonly health: AllocationHealthContext;
}

/** The allocation as its machine sees it now; undefined while no machine runs for it. */
function supervisedOf(admitted: Admitted): SupervisedAllocation | undefined {
  const { machine } = admitted;
  return machine && { alloc: admitted.ref, jobVersion: admitted.jobVersion, state: machine.value, health: machine.context };
}

function deploymentOf(allocation: Pick<Allocation, 'DeploymentID'>): string | undefined {
  return allocation.DeploymentID || undefined;
}

/**
 * An update that moves the allocation into another deployment than the one it was judged for (an
 * in-place update): Nomad's client then clears its health and watches it again.
 */
function movedFrom(judged: string | undefined, allocation: Allocation): boolean {
  const deploymentId = deploymentOf(allocation);
  return deploymentId !== undefined && deploymentId !== judged;
}

const CLIENT_TERMINAL: ReadonlySet<string | undefined> = new Set(['complete', 'failed', 'lost']);

/** Nomad's client is still watching the allocation for a deployment: it will record a decision. */
function nomadStillDeciding(allocation: Allocation, policy: HealthPolicy): boolean {
  return policy.source === 'update' && allocation.DesiredStatus === 'run' && !CLIENT_TERMINAL.has(allocation.ClientStatus) && deploymentOf(allocation) !== undefined;
}

/** The verdict as a few words, for a disagreement's message. */
function verdictWords(outcome: VerdictOutcome): string {
  if ('stopped' in outcome) return `stopped (not judged) at ${new Date(outcome.at).toISOString()}`;
  if ('undetermined' in outcome) return 'undetermined';
  return `${outcome.healthy ? 'healthy' : 'unhealthy'} at ${new Date(outcome.at).toISOString()}`;
}

export class AllocationIntake {
  /** The health machines of the allocations admitted (kept on their records). */
  readonly registry: HealthRegistry;
  readonly verdicts$: Observable<VerdictRecord>;
  readonly changes$: Observable<StateChange>;
  /** Allocations left unjudged, with why (Nomad does not watch them, their job is gone...). */
  readonly unjudged$: Observable<Unjudged>;

  private readonly verdictSubject = new Subject<VerdictRecord>();
  private readonly changeSubject = new Subject<StateChange>();
  private readonly unjudgedSubject = new Subject<Unjudged>();
  private readonly book: VerdictBook;
  private readonly admitted = new AdmittedRecords();
  /** The latest update of allocations whose job is being looked up. */
  private readonly resolving = new Map<string, Allocation>();
  /** The update that moved an allocation into another deployment, until it is watched again from it. */
  private readonly rewatches: BoundedHistory<MovingUpdate>;
  /** Admitted allocations whose client has not reported them yet (the oldest forgotten first: one may never come). */
  private readonly awaitingClient: BoundedHistory<true>;
  /** Allocations whose job could not be had, reported once each. */
  private readonly jobFailures: BoundedHistory<string>;
  /** Their latest update, looked up again once the failure is forgotten (or at their next update). */
  private readonly awaitingJob: BoundedHistory<Allocation>;
  private retryTimer: TimerHandle | undefined;
  private readonly moves: InPlaceMoves;
  /** One string for each job and deployment ID, however many allocations' refs name it (each copy of an allocation brings its own). */
  private readonly names = new BoundedHistory<string>(1_024);
  /** Allocations whose verdict has been checked against the decision Nomad's client recorded. */
  private readonly checkedWithNomad: BoundedHistory<true>;
  /** How each job version's groups are judged, decided once per job object the cache hands out (all its allocations share the policy). */
  private readonly judgements = new WeakMap<Job, Map<string, Judgement>>();
  private stopped = false;

  constructor(private readonly options: AllocationIntakeOptions) {
    this.book = new VerdictBook(options.historySize);
    this.jobFailures = new BoundedHistory(options.historySize);
    this.rewatches = new BoundedHistory(options.historySize);
    this.awaitingClient = new BoundedHistory(options.historySize);
    this.awaitingJob = new BoundedHistory(options.historySize);
    this.checkedWithNomad = new BoundedHistory(options.historySize);
    this.moves = new InPlaceMoves(options.nomad, options.historySize);
    this.verdicts$ = this.verdictSubject.asObservable();
    this.changes$ = this.changeSubject.asObservable();
    this.unjudged$ = this.unjudgedSubject.asObservable();
    this.registry = new HealthRegistry({ ...options.health, machines: this.admitted });
    this.registry.subscribe((change) => this.onHealthChange(change));
  }

  /**
   * An allocation update, from whatever source: the stream (`live`: it says how late updates come),
   * a listing after a reconnect, a read.
   */
  receive(allocation: Allocation, live = false): void {
    const id = allocation.ID;
    if (this.stopped || typeof id !== 'string' || !this.options.scope.includes(allocation.Namespace, allocation.JobID)) return;
    const admitted = this.admitted.record(id);
    if (admitted && !movedFrom(admitted.ref.deploymentId, allocation)) {
      // Judged again from its history: what it brings is not late delivery (no lag to learn from).
      if (this.reconnected(admitted, allocation)) {
        this.reopen(admitted);
        return this.judge(admitted, allocation, false);
      }
      return this.judge(admitted, allocation, live);
    }
    const pending = this.resolving.get(id);
    if (pending) {
      if (movedFrom(deploymentOf(pending), allocation)) this.rewatches.set(id, allocation);
      this.resolving.set(id, allocation);
      return;
    }
    // Decided (judged or not) for the deployment it is in: nothing more to do.
    const judged = this.book.verdict(id);
    const unjudged = this.book.unjudgedReason(id);
    if (judged && !movedFrom(judged.alloc.deploymentId, allocation)) return this.checkWithNomad(judged, nomadDecision(allocation));
    if (unjudged && !movedFrom(unjudged.alloc.deploymentId, allocation)) return;
    if (admitted || judged || unjudged) this.rewatch(id, allocation);
    this.resolve(id, allocation);
  }

  /**
   * The verdict of an allocation: at once if known, else when reached. Rejects with
   * AllocationNotJudgedError for an allocation no policy judges.
   */
  verdict(allocId: string): Promise<VerdictRecord> {
    // Watched again for a new deployment: what the book says is about the old one.
    const judging = this.admitted.record(allocId) !== undefined || this.resolving.has(allocId);
    const known = judging ? undefined : this.book.verdict(allocId);
    if (known) return Promise.resolve(known);
    const unjudged = judging ? undefined : this.book.unjudgedReason(allocId);
    if (unjudged !== undefined) return Promise.reject(new AllocationNotJudgedError(allocId, unjudged.reason));
    if (this.stopped) return Promise.reject(new SupervisorStoppedError(`the verdict of ${allocId}`));
    return this.book.wait(allocId);
  }

  /** Every verdict kept, oldest first. */
  records(): IterableIterator<VerdictRecord> {
    return this.book.records();
  }

  /** Every allocation left unjudged that is kept, oldest first. */
  unjudgedRecords(): IterableIterator<Unjudged> {
    return this.book.unjudgedRecords();
  }

  /** How the group is judged for an allocation in a deployment (or not, and why), by `rules`. */
  judgementOf(job: Job, group: string, inDeployment: boolean, rules: NomadRules): Judgement {
    let groups = this.judgements.get(job);
    const key = `${rules.version}\u0000${inDeployment ? 'd' : 'm'}${group}`;
    const known = groups?.get(key);
    if (known !== undefined) return known;
    const judgement = judgementOf(job, group, { inDeployment, rules, optIn: this.options.policy, checksUnavailable: (spec) => this.options.checks.unavailable(spec) });
    if (groups === undefined) this.judgements.set(job, (groups = new Map()));
    groups.set(key, judgement);
    return judgement;
  }

  /**
   * Visits the allocations of a deployment still being judged: machines running (admitted; undefined
   * while its job or node is read). One its client never reported is not among them (Nomad is not
   * watching it either). A callback, not a list: a gate counts them after every step once its
   * deployment has ended.
   */
  private eachJudgingIn(deploymentId: string, visit: (allocId: string, admitted: Admitted | undefined) => void): void {
    for (const admitted of this.admitted.all()) if (admitted.ref.deploymentId === deploymentId && !admitted.opening) visit(admitted.ref.allocId, admitted);
    for (const [allocId, allocation] of this.resolving) if (deploymentOf(allocation) === deploymentId) visit(allocId, undefined);
  }

  /** How many allocations of a deployment are still being judged (see eachJudgingIn). */
  undecidedIn(deploymentId: string): number {
    let count = 0;
    this.eachJudgingIn(deploymentId, () => count++);
    return count;
  }

  /** Those allocations, each with where its judgement is (a gate that gives up says them). */
  stillJudgedIn(deploymentId: string): { allocId: string; state: string }[] {
    const judged: { allocId: string; state: string }[] = [];
    this.eachJudgingIn(deploymentId, (allocId, admitted) => {
      const state =
        admitted === undefined ? 'its job or node being read' : admitted.awaitingNomad ? "waiting for Nomad's recorded decision" : String(admitted.machine?.value ?? 'no machine');
      judged.push({ allocId, state });
    });
    return judged;
  }

  /** Number of allocations with a live health machine. */
  get supervised(): number {
    return this.registry.size;
  }

  /** The allocation if it is being judged now; undefined once its verdict is in. */
  supervisedAllocation(allocId: string): SupervisedAllocation | undefined {
    const admitted = this.admitted.record(allocId);
    return admitted && supervisedOf(admitted);
  }

  supervisedAllocations(): SupervisedAllocation[] {
    return [...this.admitted.all()].flatMap((admitted) => supervisedOf(admitted) ?? []);
  }

  /** Ends every machine and fails the waits. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const admitted of [...this.admitted.all()]) this.release(admitted.ref.allocId);
    this.resolving.clear();
    this.rewatches.clear();
    this.awaitingClient.clear();
    this.awaitingJob.clear();
    if (this.retryTimer !== undefined) this.options.clock.clearTimeout(this.retryTimer);
    this.book.failAll((allocId) => new SupervisorStoppedError(`the verdict of ${allocId}`));
    this.verdictSubject.complete();
    this.changeSubject.complete();
    this.unjudgedSubject.complete();
  }

  /**
   * health_hook.go Update: moved into another deployment, the allocation's health is cleared and it
   * is watched again, from that update, with its new job version's policy. The old machine goes; a
   * verdict it reached stays in the book (for the old deployment) until the new one replaces it.
   */
  private rewatch(id: string, allocation: Allocation): void {
    this.release(id);
    // A retry after a failed job lookup keeps the update that did the moving.
    const moving = this.rewatches.get(id);
    if (moving === undefined || deploymentOf(moving) !== deploymentOf(allocation)) this.rewatches.set(id, allocation);
    this.options.logger.debug('allocation moved into another deployment; watching it again', { allocId: id, deploymentId: allocation.DeploymentID });
  }

  private resolve(id: string, allocation: Allocation): void {
    this.awaitingJob.delete(id);
    // Never watched before: it may have been moved in place before we started (a read tells).
    const mayHaveMoved = !this.rewatches.has(id) && this.moves.mayHaveMoved(allocation);
    // Its job version and the cluster's release known, nothing to read: admitted at once.
    const job = mayHaveMoved || this.options.release.rules === undefined ? undefined : this.options.jobs.cachedJobFor(allocation);
    if (job !== undefined) {
      this.admit(id, job, allocation);
      this.options.onSettled?.();
      return;
    }
    this.resolving.set(id, allocation);
    const lookups = [this.options.jobs.jobFor(allocation), mayHaveMoved ? this.moves.movedBy(allocation) : undefined, this.options.release.whenKnown()] as const;
    Promise.all(lookups).then(
      ([job, movedBy]) => {
        if (movedBy && !this.rewatches.has(id)) this.rewatches.set(id, movedBy);
        const latest = this.resolving.get(id);
        if (latest !== undefined && !this.stopped) {
          // Moved into another deployment while the job was looked up: it runs that deployment's version.
          if (deploymentOf(latest) !== deploymentOf(allocation)) this.resolve(id, latest);
          else {
            this.resolving.delete(id);
            this.admit(id, job, latest);
          }
        }
        this.options.onSettled?.();
      },
      (error: unknown) => {
        const latest = this.resolving.get(id);
        this.resolving.delete(id);
        if (this.stopped || latest === undefined) return;
        const message = `allocation ${id}: ${errorMessage(error)}`;
        // An allocation long over whose job is gone (purged) has nothing left to judge it by.
        if (latest.DesiredStatus !== 'run' && CLIENT_TERMINAL.has(latest.ClientStatus)) {
          this.markUnjudged({ alloc: this.refOf(latest), reason: `its job could not be had: ${errorMessage(error)}` });
          return;
        }
        this.options.onSettled?.();
        this.retryLater(id, latest);
        if (this.jobFailures.get(id) === message) return;
        this.jobFailures.set(id, message);
        this.options.report({ kind: 'job-unavailable', allocId: id, message });
      },
    );
  }

  /**
   * The job could not be had (Nomad unreachable, a 5xx): the allocation's latest update is looked up
   * again once the job cache forgets the failure, whether or not another update comes.
   */
  private retryLater(id: string, allocation: Allocation): void {
    this.awaitingJob.set(id, allocation);
    if (this.retryTimer !== undefined) return;
    this.retryTimer = this.options.clock.setTimeout(() => {
      this.retryTimer = undefined;
      const due = [...this.awaitingJob.entries()];
      this.awaitingJob.clear();
      for (const [allocId, latest] of due) if (this.admitted.record(allocId) === undefined && !this.resolving.has(allocId)) this.receive(latest);
    }, this.options.jobs.failureTtlMs);
  }

  /** Judges the allocation with its job version's policy (or marks it unjudged, with why). */
  private admit(id: string, job: Job, allocation: Allocation): void {
    const rules = this.options.release.rules as NomadRules;
    let judgement: Judgement;
    try {
      judgement = this.judgementOf(job, allocation.TaskGroup, deploymentOf(allocation) !== undefined, rules);
    } catch (error) {
      this.options.report({ kind: 'bad-allocation', allocId: id, message: `allocation ${id}: ${errorMessage(error)}` });
      return;
    }
    if ('reason' in judgement) {
      this.markUnjudged({ alloc: this.refOf(allocation), reason: judgement.reason });
      this.options.logger.debug('allocation not judged', { allocId: id, reason: judgement.reason });
      return;
    }
    const group = (job.TaskGroups ?? []).find((candidate) => candidate.Name === allocation.TaskGroup) as TaskGroup;
    const policy = this.policyOf(id, job, group, allocation, judgement);
    if (policy === undefined) return;
    const moving = this.rewatches.get(id);
    this.rewatches.delete(id);
    const rewatchedBy = moving && deploymentOf(moving) === deploymentOf(allocation) ? moving : undefined;
    const rewatchedFrom = rewatchedBy === undefined ? undefined : this.rewatchTime(rewatchedBy);
    const admitted: Admitted = { ref: this.refOf(allocation, id), group, policy, jobVersion: job.Version, opening: true, rewatchedFrom, awaitingNomad: false, nomad: undefined, machine: undefined };
    // Admitted again: the new record replaces the old one, machine and all.
    if (this.admitted.record(id) !== undefined) this.release(id);
    this.admitted.admit(admitted);
    const forgotten = this.awaitingClient.set(id, true);
    if (forgotten !== undefined && this.admitted.record(forgotten)?.opening === true) this.release(forgotten);
    this.judge(admitted, allocation);
  }

  /**
   * The allocation's own policy: the group's, its check names interpolated with the allocation's
   * environment when they use variables (NomadRules.interpolatedCheckNames). Undefined when it is
   * not to be judged yet (its node is being read: admitted again then) or at all (marked unjudged).
   */
  private policyOf(id: string, job: Job, group: TaskGroup, allocation: Allocation, judgement: Extract<Judgement, { policy: HealthPolicy }>): HealthPolicy | undefined {
    if (judgement.names === 'nothing') return judgement.policy;
    const nodeId = allocation.NodeID;
    const reading = judgement.names === 'node' && nodeId ? this.options.nodes.cached(nodeId) : undefined;
    if (judgement.names === 'node' && nodeId && reading === undefined) {
      this.resolving.set(id, allocation);
      void this.options.nodes.read(nodeId).then(() => {
        const latest = this.resolving.get(id);
        this.resolving.delete(id);
        if (latest !== undefined && !this.stopped) this.admit(id, job, latest);
        this.options.onSettled?.();
      });
      return undefined;
    }
    const node = reading !== undefined && 'node' in reading ? reading.node : undefined;
    const { rules } = judgement.policy;
    if (judgement.names === 'node' && node === undefined && rules.missingChecksFail && rules.interpolatedCheckNames) {
      const why = reading !== undefined && 'problem' in reading ? reading.problem : 'the allocation has no node';
      this.markUnjudged({ alloc: this.refOf(allocation), reason: `its check names use its node's record (\${node.*}, \${attr.*}, \${meta.*} or \${NOMAD_DC}), and ${why}` });
      return undefined;
    }
    return allocationPolicy(judgement.policy, group, taskEnvironments(job, group, allocation, node));
  }

  /**
   * When Nomad's client began watching again after the move: the moving update's ModifyTime, no later
   * than now (a server clock ahead of ours cannot put the re-watch after we saw the update).
   */
  private rewatchTime(moving: MovingUpdate): number | undefined {
    const parsed = parseNanoTime(moving.ModifyTime);
    if (!parsed.ok || parsed.ms === null) {
      this.options.logger.debug('re-watch time unknown: the moving update has no usable ModifyTime', { problem: parsed.ok ? 'no time' : parsed.problem });
      return this.options.clock.now();
    }
    return Math.min(parsed.ms, this.options.clock.now());
  }

  /** Feeds one sight of the allocation to its machine (starting it on the first one that can be judged). */
  private judge(admitted: Admitted, allocation: Allocation, live = false): void {
    const { checks, logger } = this.options;
    const registry = this.registry;
    const id = admitted.ref.allocId;
    const opening = admitted.opening;
    // Until a machine runs for it, each sight is an opening one.
    const rewatchedFrom = opening || admitted.awaitingNomad ? admitted.rewatchedFrom : undefined;
    admitted.nomad = nomadDecision(allocation, admitted.rewatchedFrom) ?? admitted.nomad;
    try {
      const sight = judgeSight(registry, allocation, admitted.group, admitted.policy, rewatchedFrom === undefined ? { id } : { id, rewatchedFrom });
      for (const problem of sight.problems) logger.debug('allocation history', { allocId: id, problem });
      if (sight.kind === 'unreported') {
        const stopping = allocation.DesiredStatus === 'stop' || allocation.DesiredStatus === 'evict';
        if (stopping || CLIENT_TERMINAL.has(allocation.ClientStatus)) {
          this.release(id);
          this.awaitingClient.delete(id);
          this.markUnjudged({ alloc: admitted.ref, reason: 'it ended before its client ever reported it: Nomad never watched it' });
        }
        return;
      }
      if (opening) {
        admitted.opening = false;
        this.awaitingClient.delete(id);
      }
      if (live && sight.kind === 'judging' && sight.newestEventAt !== null) this.options.noteLag?.(this.options.clock.now() - sight.newestEventAt);
      if (sight.kind === 'undetermined' && nomadStillDeciding(allocation, admitted.policy)) {
        if (!admitted.awaitingNomad) logger.debug("the allocation's kept history cannot decide; waiting for Nomad's recorded decision", { allocId: id });
        admitted.awaitingNomad = true;
        return;
      }
      if (sight.kind === 'undetermined' || sight.kind === 'recorded') {
        if (sight.kind === 'recorded') logger.info("the allocation's kept history cannot decide: Nomad's recorded verdict taken", { allocId: id, healthy: sight.outcome.healthy });
        this.release(id);
        this.decide({ alloc: admitted.ref, outcome: sight.outcome }, admitted.nomad);
        return;
      }
      // The checks as known now: they count from now, not from the history's start.
      if (opening && checksRequired(admitted.policy) && admitted.machine !== undefined) {
        registry.updateChecks(id, checks.follow(id, allocation.Namespace, admitted.group), { sampled: checks.sampled(admitted.group) });
      }
    } catch (error) {
      this.release(id);
      this.options.report({ kind: 'bad-allocation', allocId: id, message: `allocation ${id}: ${errorMessage(error)}` });
    }
  }

  /** Its machine waits for a disconnected client, and this copy is the client's (or the server's final) word. */
  private reconnected(admitted: Admitted, allocation: Allocation): boolean {
    return admitted.machine?.value === 'disconnected' && allocation.ClientStatus !== 'unknown';
  }

  /** Judged again from the start of its history, as the client reports it now. */
  private reopen(admitted: Admitted): void {
    this.forget(admitted.ref.allocId);
    admitted.opening = true;
    this.options.logger.debug('allocation reported again after a disconnect; judging it from its history', { allocId: admitted.ref.allocId });
  }

  private onHealthChange(change: HealthChange): void {
    // A machine steps a few times per update: its transitions are looked up only for a subscriber.
    if (change.type === 'transition' && !this.changeSubject.observed) return;
    const admitted = this.admitted.record(change.allocationId);
    if (!admitted) return;
    if (change.type === 'transition') {
      this.changeSubject.next({ alloc: admitted.ref, from: change.from, to: change.to, at: change.at });
      return;
    }
    this.release(change.allocationId);
    this.decide({ alloc: admitted.ref, outcome: change.outcome }, admitted.nomad);
  }

  /** `allocId`: the string the intake keys the allocation by, so that no later copy's ID string is kept beside it. */
  private refOf(allocation: Allocation, allocId = allocation.ID): AllocationRef {
    return {
      allocId,
      name: allocation.Name,
      namespace: allocation.Namespace || 'default',
      jobId: this.intern(allocation.JobID),
      taskGroup: allocation.TaskGroup,
      deploymentId: allocation.DeploymentID ? this.intern(allocation.DeploymentID) : undefined,
    };
  }

  private intern(name: string): string {
    const known = this.names.get(name);
    if (known !== undefined) return known;
    this.names.set(name, name);
    return name;
  }

  private markUnjudged(unjudged: Unjudged): void {
    this.book.markUnjudged(unjudged);
    this.unjudgedSubject.next(unjudged);
  }

  private decide(record: VerdictRecord, nomad: NomadDecision | undefined): void {
    this.book.record(record);
    this.verdictSubject.next(record);
    this.checkWithNomad(record, nomad);
  }

  /**
   * Nomad's decision confirms Warden's verdict, or Warden says where they differ (once per
   * allocation): a verdict judged from the history is Warden's own, never replaced by Nomad's.
   */
  private checkWithNomad(record: VerdictRecord, nomad: NomadDecision | undefined): void {
    const { outcome, alloc } = record;
    if (nomad === undefined || 'undetermined' in outcome || 'basis' in outcome || this.checkedWithNomad.has(alloc.allocId)) return;
    this.checkedWithNomad.set(alloc.allocId, true);
    const nomadWords = `${nomad.healthy ? 'healthy' : 'unhealthy'} at ${new Date(nomad.at).toISOString()}`;
    const fields = { allocId: alloc.allocId, warden: verdictWords(outcome), nomad: nomadWords };
    // Nomad 1.1.2's client marks an allocation stopped before it was healthy unhealthy (it never sees the stop).
    if ('stopped' in outcome ? !nomad.healthy : outcome.healthy === nomad.healthy) {
      this.options.logger.debug("Nomad's recorded decision agrees", fields);
      return;
    }
    this.options.report({
      kind: 'nomad-disagrees',
      allocId: alloc.allocId,
      message: `allocation ${alloc.allocId}${alloc.name ? ` (${alloc.name})` : ''}: Warden judged it ${verdictWords(outcome)} from its history; Nomad's client recorded ${nomadWords}`,
    });
  }

  /** Forgets an admitted allocation: its machine, its check following, its record. */
  private release(id: string): void {
    this.forget(id);
    this.admitted.remove(id);
  }

  /** Drops the machine and the check following of an allocation. */
  private forget(id: string): void {
    this.registry.drop(id);
    this.options.checks.forget(id);
  }
}
