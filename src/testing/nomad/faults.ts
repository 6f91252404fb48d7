/**
 * Fault switches: what can go wrong between a client and Nomad, on demand. A stream plan applies
 * to the next event-stream connection(s); request failures and refusals count down. Where a fault
 * is random it draws from a seeded generator, so a failing test replays exactly.
 */
import { SeededRandom } from './ids.js';

export interface StreamFaultPlan {
  /** Destroy the connection right after the line that delivers the Nth event. */
  cutAfterEvents?: number;
  /** After N events, write only the first half of the next data line, then destroy the connection. */
  truncateAfterEvents?: number;
  /** After N events, send nothing more (no heartbeats either) while keeping the connection open. */
  stallAfterEvents?: number;
  /** After N events, write Nomad's raw mid-stream error text (no newline) and end the response. */
  errorAfterEvents?: number;
  /** Every k-th data line is sent twice. */
  repeatEvery?: number;
  /** Every k-th data line is held back and sent after the line that follows it. */
  reorderEvery?: number;
  /** Each data line is sent twice with this probability (seeded). */
  repeatProbability?: number;
  /** Each data line is swapped with the next with this probability (seeded). */
  reorderProbability?: number;
  seed?: number;
}

/** The text Nomad appends when the server ends a subscription. */
export const STREAM_CLOSED_TEXT = 'subscription closed by server, client should resubscribe';

export interface RequestFailure {
  status?: number;
  body?: string;
  /** Only requests whose path starts with this string (or matches this expression). */
  path?: string | RegExp;
  /** How many requests fail (default 1; Infinity until cleared). */
  times?: number;
  /** Response headers to send with it (`Retry-After`, say). */
  headers?: Readonly<Record<string, string>>;
}

/** A request failure as the server answers it. */
export interface RequestFailureAnswer {
  status: number;
  body: string;
  headers: Readonly<Record<string, string>>;
}

/**
 * Registers with EnforceIndex that are checked at once and applied a little later, as Nomad's
 * Job.Register checks the index against its state before the raft apply: a purge of the same job
 * arriving in between is applied first, and the register then re-creates the purged job at
 * version 0 (measured on Nomad 1.1.2: a register sent together with a purge is accepted about half
 * the time, and sometimes re-creates the job).
 */
export interface RegisterRace {
  /** Jobs whose ID equals this, or matches this expression (default: any). */
  jobId?: string | RegExp;
  /** The share of matching registers held (default 1: every one), drawn from `seed`. */
  probability?: number;
  /** How many registers are held (default: until cleared). */
  times?: number;
  /** How long a held register waits between its check and its apply (default 1 ms). */
  windowMs?: number;
  seed?: number;
}

interface Counted<T> {
  value: T;
  remaining: number;
}

export class FaultSwitches {
  private streamPlans: Counted<StreamFaultPlan>[] = [];
  private failures: Counted<RequestFailureAnswer & { path?: string | RegExp }>[] = [];
  private refusals = 0;
  private races: (Counted<RegisterRace> & { random: SeededRandom })[] = [];

  /** Applies `plan` to the next `times` event-stream connections (default 1). */
  stream(plan: StreamFaultPlan, times = 1): this {
    this.streamPlans.push({ value: plan, remaining: times });
    return this;
  }

  /** Accepted TCP connections are destroyed at once, `times` times (default: until cleared). */
  refuseConnections(times = Infinity): this {
    this.refusals = times;
    return this;
  }

  /** Answers matching requests with an error status (default 500) and a plain-text body, as Nomad writes errors. */
  failRequests(failure: RequestFailure = {}): this {
    this.failures.push({
      value: {
        status: failure.status ?? 500,
        body: failure.body ?? 'rpc error: fake Nomad fault',
        headers: failure.headers ?? {},
        ...(failure.path === undefined ? {} : { path: failure.path }),
      },
      remaining: failure.times ?? 1,
    });
    return this;
  }

  /** Lets registers with EnforceIndex race writes sent with them (RegisterRace). */
  raceRegisters(race: RegisterRace = {}): this {
    this.races.push({ value: race, remaining: race.times ?? Infinity, random: new SeededRandom(race.seed ?? 1) });
    return this;
  }

  clear(): void {
    this.streamPlans = [];
    this.failures = [];
    this.refusals = 0;
    this.races = [];
  }

  /** @internal How long a register of `jobId` with EnforceIndex waits between its check and its apply, if it is held. */
  takeRegisterRace(jobId: string): number | undefined {
    const race = this.races.find((r) => r.remaining > 0 && (r.value.jobId === undefined || (typeof r.value.jobId === 'string' ? r.value.jobId === jobId : r.value.jobId.test(jobId))));
    if (race === undefined || race.random.next() >= (race.value.probability ?? 1)) return undefined;
    race.remaining--;
    this.races = this.races.filter((r) => r.remaining > 0);
    return race.value.windowMs ?? 1;
  }

  /** @internal The plan for a new stream connection, if any. */
  takeStreamPlan(): StreamFaultPlan | undefined {
    const plan = take(this.streamPlans);
    this.streamPlans = this.streamPlans.filter((p) => p.remaining > 0);
    return plan;
  }

  /** @internal Whether to drop a new connection. */
  takeRefusal(): boolean {
    if (this.refusals <= 0) return false;
    this.refusals--;
    return true;
  }

  /** @internal The failure to answer a request for `path` with, if any. */
  takeFailure(path: string): RequestFailureAnswer | undefined {
    const failure = take(this.failures.filter((f) => matches(f.value.path, path)));
    this.failures = this.failures.filter((f) => f.remaining > 0);
    return failure;
  }
}

/** Spends one use of the first item with uses left. */
function take<T>(queue: readonly Counted<T>[]): T | undefined {
  const head = queue.find((item) => item.remaining > 0);
  if (head === undefined) return undefined;
  head.remaining--;
  return head.value;
}

function matches(pattern: string | RegExp | undefined, path: string): boolean {
  if (pattern === undefined) return true;
  return typeof pattern === 'string' ? path.startsWith(pattern) : pattern.test(path);
}

/** What the stream writer does with each line under a plan. */
export class StreamFaultState {
  private events = 0;
  private lines = 0;
  private held: string | undefined;
  private readonly random: SeededRandom;

  constructor(readonly plan: StreamFaultPlan) {
    this.random = new SeededRandom(plan.seed ?? 1);
  }

  /** True once the stall point is passed: nothing more is written. */
  get stalled(): boolean {
    return this.plan.stallAfterEvents !== undefined && this.events >= this.plan.stallAfterEvents;
  }

  /**
   * The actions for one data line carrying `eventCount` events: whole lines to write (in order), a
   * partial line without its newline, then what happens to the connection.
   */
  onLine(line: string, eventCount: number): { write: string[]; partial?: string; then?: 'cut' | 'error' } {
    const { plan } = this;
    if (this.stalled) return { write: [] };
    if (plan.truncateAfterEvents !== undefined && this.events >= plan.truncateAfterEvents) {
      return { write: [], partial: line.slice(0, Math.max(1, Math.floor(line.length / 2))), then: 'cut' };
    }
    this.lines++;
    this.events += eventCount;
    let write = [line];
    if ((plan.repeatEvery && this.lines % plan.repeatEvery === 0) || this.chance(plan.repeatProbability)) write = [line, line];
    if (this.held !== undefined) {
      write = [...write, this.held];
      this.held = undefined;
    } else if ((plan.reorderEvery && this.lines % plan.reorderEvery === 0) || this.chance(plan.reorderProbability)) {
      this.held = line;
      write = write.slice(1);
    }
    const reached = (limit: number | undefined): boolean => limit !== undefined && this.events >= limit;
    if (reached(plan.cutAfterEvents)) return { write, then: 'cut' };
    if (reached(plan.errorAfterEvents)) return { write, then: 'error' };
    return { write };
  }

  private chance(probability: number | undefined): boolean {
    return probability !== undefined && this.random.next() < probability;
  }
}
