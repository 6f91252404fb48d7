/**
 * What Warden must say of an allocation, from what Nomad's own client decided on the live agent
 * (its DeploymentStatus and "Alloc Unhealthy" events, as they reached the stream), judged by the
 * rules of the agent's release as Warden judges it, with Warden's deliberate differences from
 * Nomad (README "Deliberate differences") applied, and the comparison of a verdict Warden printed
 * against it.
 */
import type { HealthPolicy } from '../../../machines/allocationHealthTypes.js';
import type { NomadRules } from '../../../machines/nomadRules.js';
import { healthPolicyFor } from '../../../src/health/index.js';
import { nomadDecision, releaseWords } from '../../../src/health/nomadDecision.js';
import { nanoTimeMs } from '../../../src/health/nomadTime.js';
import type { Allocation, Job, TaskEvent, TaskGroup } from '../../../src/nomad/types.js';
import type { NomadDecision } from './healthObserver.js';

export type Expectation =
  /** Nomad decided nothing (not watched, manual, batch): Warden prints no verdict. */
  | { readonly kind: 'none'; readonly why: string }
  /**
   * Nomad's client watched it and recorded no decision, its tasks failed for good: 1.1.2's health
   * hook is shut down with the allocation, and when that comes before its tracker reports (a race,
   * seen under load and, for failed_task, on an idle machine) nothing is recorded but an untimed
   * Healthy=false, and the deployment fails at its progress deadline without it healthy. Warden,
   * judging by the data, says unhealthy.
   */
  | { readonly kind: 'unrecorded failure'; readonly explained: string }
  /**
   * Stopped by the server before it was healthy: Warden says stopped. 1.1.2's client marks it
   * unhealthy with no reason (`documented`) when its tracker reports the killed task before the
   * health hook's Postrun cancels the watch, and records nothing when the Postrun comes first.
   */
  | { readonly kind: 'stopped'; readonly documented?: string }
  | {
      readonly kind: 'verdict';
      readonly healthy: boolean;
      /** Nomad's Timestamp (or, where Warden differs as documented, the time it must say). */
      readonly at: number;
      /** Nomad's reasons in the words of the release judged by, per task; undefined when its events were lost before they reached the stream. */
      readonly reasons: Readonly<Record<string, string>> | undefined;
      /** Tasks Nomad 1.1.2 explains that today's tracker does not (a running task against a zero deadline). */
      readonly artefacts: ReadonlySet<string>;
      /**
       * Tasks Nomad called "not running" at its deadline that had started by then, as their events
       * time it: its tracker had not seen the start yet. Warden, judging by the data, says they
       * started too late for min_healthy_time.
       */
      readonly startUnseen: ReadonlySet<string>;
      /** Nomad's verdict is its deadline's: a healthy verdict Warden times just before it is Nomad's lag, not a disagreement. */
      readonly atDeadline: boolean;
      /** Set where Warden differs from Nomad 1.1.2 as the fixtures README documents. */
      readonly documented?: string;
      /** The first copy saying a task stopped running: when the stop happened, and when the copy reached the stream. */
      readonly stop?: { readonly at: number; readonly arrivedAt: number };
    };

/** A verdict Warden printed (watch line or gate entry). */
export interface WardenVerdict {
  readonly verdict: 'healthy' | 'unhealthy' | 'stopped' | 'undetermined';
  readonly at: number;
  readonly reasons?: Readonly<Record<string, string>>;
  /** Set when Warden took the verdict from Nomad's recorded decision. */
  readonly basis?: string;
  /** When Warden printed it (a watch's line), on this process's clock. */
  readonly printedAt?: number;
}

/** The policy Nomad's client (of the release `rules` are) judged the allocation's group by, or why it did not judge it. */
export function policyOf(job: Job, group: string, rules: NomadRules): HealthPolicy | string {
  const decision = healthPolicyFor(job, group, { deployment: true, rules });
  return decision.watched ? decision.policy : decision.reason;
}

/** When the task first started, as its kept events time it. */
function firstStart(allocation: Allocation, task: string): number | undefined {
  const started = allocation.TaskStates?.[task]?.Events?.find((event) => event.Type === 'Started');
  return started === undefined ? undefined : nanoTimeMs(started.Time);
}

/** The poststart tasks (not sidecars) that exited successfully: before 1.1.13 their exit failed the allocation, and Nomad named no lifecycle task. */
function successfulPoststarts(group: TaskGroup, allocation: Allocation): string[] {
  return group.Tasks.filter((task) => {
    const state = allocation.TaskStates?.[task.Name];
    return task.Lifecycle?.Hook === 'poststart' && task.Lifecycle.Sidecar !== true && state?.State === 'dead' && state.Failed !== true;
  }).map((task) => task.Name);
}

/** In a deployment, and no decision of Nomad's client as Warden reads one (an untimed mark is none). */
function undecided(allocation: Allocation): boolean {
  return Boolean(allocation.DeploymentID) && nomadDecision(allocation) === undefined;
}

/**
 * Watched for a deployment, stopped by the server and over on its client with no decision: the
 * health hook was shut down with the allocation before its tracker reported the killed task.
 */
export function unrecordedStop(allocation: Allocation): boolean {
  return undecided(allocation) && allocation.DesiredStatus === 'stop' && allocation.ClientStatus === 'complete';
}

/**
 * Watched for a deployment, failed for good with no verdict of its tracker: Nomad's client will not
 * decide it any more. Its DeploymentStatus says nothing, or Healthy=false with no time: 1.1.2's
 * client marks a failed allocation so when its health watch did not (client/allocrunner
 * alloc_runner.go clientAlloc, "guards against the watcher not be started").
 */
export function unrecordedFailure(allocation: Allocation): boolean {
  return undecided(allocation) && allocation.ClientStatus === 'failed';
}

/**
 * What Warden must say of `allocation` (Nomad's final copy), whose client decided `decision` with
 * `unhealthyEvents` (task → DisplayMessage), judged by its job version `job`.
 */
export function expectationFor(allocation: Allocation, job: Job, decision: NomadDecision | undefined, events: ReadonlyMap<string, TaskEvent>, rules: NomadRules, stop?: { at: number; arrivedAt: number }): Expectation {
  const unhealthyEvents = new Map([...events].map(([task, event]) => [task, event.DisplayMessage ?? '']));
  const policy = policyOf(job, allocation.TaskGroup, rules);
  if (typeof policy === 'string') return { kind: 'none', why: policy };
  if (decision === undefined && unrecordedFailure(allocation)) {
    return { kind: 'unrecorded failure', explained: "Nomad's client recorded no timed decision (its health hook shut down with the failed allocation first)" };
  }
  if (decision === undefined && unrecordedStop(allocation)) return { kind: 'stopped' };
  if (decision === undefined) return { kind: 'none', why: 'Nomad decided nothing' };
  const group = (job.TaskGroups ?? []).find((candidate) => candidate.Name === allocation.TaskGroup) as TaskGroup;
  if (!decision.healthy && unhealthyEvents.size === 0 && allocation.DesiredStatus === 'stop') {
    return { kind: 'stopped', documented: "1.1.2's client never saw the server's stop: it judged a task it was killing" };
  }
  if (decision.healthy) return { kind: 'verdict', healthy: true, at: decision.at, reasons: {}, artefacts: new Set(), startUnseen: new Set(), atDeadline: false };
  const reasons: Record<string, string> = {};
  const artefacts = new Set<string>();
  const startUnseen = new Set<string>();
  for (const [task, message] of unhealthyEvents) {
    reasons[task] = releaseWords(message, policy);
    if (/^Task not running for min_healthy_time of .+ by deadline$/.test(message)) artefacts.add(task);
    const started = firstStart(allocation, task);
    if (message === 'Task not running by deadline' && started !== undefined && started <= decision.at) startUnseen.add(task);
  }
  // Where the release failed the allocation for a poststart task's success, Warden names the task (Nomad names no lifecycle task).
  const poststarts = rules.poststartSuccessHealthy ? [] : successfulPoststarts(group, allocation);
  for (const task of poststarts) reasons[task] = 'Unhealthy because of dead task';
  const atDeadline = [...unhealthyEvents.values()].some((message) => message.endsWith('by deadline') || /by healthy_deadline of \S+$/.test(message));
  const documented = poststarts.length > 0 ? `Warden names the poststart task whose success failed the allocation (${poststarts.join(', ')}); Nomad ${rules.version} names none` : undefined;
  return {
    kind: 'verdict', healthy: false, at: decision.at, reasons: unhealthyEvents.size === 0 && poststarts.length === 0 ? undefined : reasons, artefacts, startUnseen, atDeadline,
    ...(documented === undefined ? {} : { documented }),
    ...(stop === undefined ? {} : { stop }),
  };
}

export interface Comparison {
  readonly agrees: boolean;
  /** Why not, or the documented difference it shows. */
  readonly note?: string;
  /** Set where Warden's verdict differs from Nomad's by Nomad's own lag (Warden must have reported it). */
  readonly explained?: true;
  /** Warden's verdict time less Nomad's (verdicts with a time to compare). */
  readonly offMs?: number;
}

/**
 * Whether Warden's reasons say what Nomad's do: Nomad's zero-deadline artefacts may be missing from
 * Warden's, and a task whose start Nomad's tracker had not seen is "too late for min_healthy_time"
 * to Warden. Undefined: the same; else whether a difference is of the second kind only.
 */
function reasonsDiffer(warden: Readonly<Record<string, string>>, expected: Extract<Expectation, { kind: 'verdict' }>): 'no' | 'explained' | 'yes' {
  if (expected.reasons === undefined) return 'no';
  let explained = false;
  for (const [task, reason] of Object.entries(warden)) {
    if (expected.reasons[task] === reason) continue;
    if (!expected.startUnseen.has(task) || !reason.startsWith('Task not running for min_healthy_time')) return 'yes';
    explained = true;
  }
  for (const task of Object.keys(expected.reasons)) if (warden[task] === undefined && !expected.artefacts.has(task)) return 'yes';
  return explained ? 'explained' : 'no';
}

/**
 * How far Warden's verdict time may be from Nomad's. Warden times a verdict by the data (a task's
 * start + min_healthy_time, its finish, Received + healthy_deadline); Nomad's client by when its
 * tracker noticed (it restarts its min_healthy_time timer when the update reaches it) and its timer
 * fired: Nomad's Timestamp is later by the client's own lag, which grows under load.
 */
export interface Tolerance {
  /** Warden up to this much earlier than Nomad. */
  readonly earlyMs: number;
  /** Warden up to this much later. */
  readonly lateMs: number;
}

/** Warden's least settle window (src/intake/freshness.ts): news later than this after a verdict's time is beyond what it waits for. */
const LEAST_SETTLE_MS = 1_000;

const iso = (ms: number | undefined): string => (ms === undefined ? 'unknown' : new Date(ms).toISOString());

/** For a healthy verdict against a task's stop: the times that tell Nomad's lag from Warden's (see compare). */
function healthyAgainstStop(warden: WardenVerdict, stop: { readonly at: number; readonly arrivedAt: number } | undefined): string {
  if (warden.verdict !== 'healthy' || stop === undefined) return '';
  return ` at ${iso(warden.at)}, printed ${iso(warden.printedAt)}; the first copy saying a task stopped (at ${iso(stop.at)}) reached the stream at ${iso(stop.arrivedAt)}`;
}

/** Compares Warden's verdict (undefined: it printed none) with the expectation, its time within `tolerance`. */
export function compare(expected: Expectation, warden: WardenVerdict | undefined, tolerance: Tolerance): Comparison {
  switch (expected.kind) {
    case 'none':
      return warden === undefined ? { agrees: true } : { agrees: false, note: `Nomad decided nothing (${expected.why}), Warden said ${warden.verdict}` };
    case 'unrecorded failure':
      return warden?.verdict === 'unhealthy' ? { agrees: true, explained: true, note: expected.explained } : { agrees: false, note: `${expected.explained}; Warden said ${warden?.verdict ?? 'nothing'}, not unhealthy` };
    case 'stopped':
      if (warden?.verdict !== 'stopped') return { agrees: false, note: `Warden said ${warden?.verdict ?? 'nothing'}, not stopped` };
      return { agrees: true, ...(expected.documented === undefined ? {} : { note: expected.documented }) };
    case 'verdict': {
      if (warden === undefined) return { agrees: false, note: `Nomad: ${expected.healthy ? 'healthy' : 'unhealthy'}; Warden said nothing` };
      const said = expected.healthy ? 'healthy' : 'unhealthy';
      const offMs = warden.at - expected.at;
      const inTime = offMs >= -tolerance.earlyMs && offMs <= tolerance.lateMs;
      if (warden.verdict !== said) {
        // Nomad's tracker starts min_healthy_time when it sees the start, late: its deadline came first.
        if (warden.verdict === 'healthy' && expected.atDeadline && inTime && offMs <= 0) {
          return { agrees: true, explained: true, offMs, note: `Warden healthy ${-offMs} ms before Nomad's deadline fired: Nomad's tracker saw the start late` };
        }
        // The task died before Nomad's min_healthy_time timer fired: its tracker saw the death late.
        if (warden.verdict === 'unhealthy' && expected.healthy && inTime && offMs <= 0) {
          return { agrees: true, explained: true, offMs, note: `Warden unhealthy ${-offMs} ms before Nomad's healthy timer fired: Nomad's tracker saw the failure late` };
        }
        // The client's word that a task stopped before the healthy time reached the stream only after Warden's
        // verdict: its sync lagged beyond the settle window, and no remote observer could have known.
        const { stop } = expected;
        if (warden.verdict === 'healthy' && stop !== undefined && stop.at <= warden.at && warden.printedAt !== undefined && warden.printedAt < stop.arrivedAt && stop.arrivedAt - warden.at > LEAST_SETTLE_MS) {
          return { agrees: true, explained: true, offMs, note: `Warden healthy at ${new Date(warden.at).toISOString()}: the client's update that a task stopped at ${new Date(stop.at).toISOString()} reached the stream ${stop.arrivedAt - warden.printedAt} ms after Warden printed it` };
        }
        return { agrees: false, note: `Nomad: ${said}; Warden: ${warden.verdict}${healthyAgainstStop(warden, stop)}` };
      }
      if (!inTime) return { agrees: false, offMs, note: `${said} ${offMs} ms from Nomad's time` };
      // Nomad's recorded verdict, its "Alloc Unhealthy" events gone with the rest of the history: no reasons left to say.
      const reasonsGone = warden.basis === 'nomad' && Object.keys(warden.reasons ?? {}).length === 0;
      const reasons = reasonsGone ? 'no' : reasonsDiffer(warden.reasons ?? {}, expected);
      if (reasons === 'yes') return { agrees: false, offMs, note: `reasons ${JSON.stringify(warden.reasons)}, Nomad's ${JSON.stringify(expected.reasons)}` };
      if (reasons === 'explained') return { agrees: true, explained: true, offMs, note: `a task started before Nomad's deadline fired, unseen by its tracker: ${JSON.stringify(warden.reasons)}` };
      return { agrees: true, offMs, ...(expected.documented ? { note: expected.documented } : {}) };
    }
  }
}
