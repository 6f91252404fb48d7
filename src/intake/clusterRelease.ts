/**
 * The Nomad release the supervised cluster runs, and so the rules its allocations are judged by
 * (machines/nomadRules.ts). Asked once at the start, and again after every reconnect of the event
 * stream (the cluster may have been upgraded meanwhile); allocations admitted from then on are
 * judged by the new release's rules, those being judged keep theirs. A version given by the user
 * is taken as it is and never asked. Where Nomad cannot be reached (a supervisor started beside an
 * agent that is starting), the first reading is tried again with back-off, allocations waiting for
 * it: a passing outage must not set the wrong rules for the whole run. A release that cannot be
 * learnt (refused, not said, or Nomad unreachable for every attempt), or one newer than any Warden
 * knows, is judged by today's rules, with a warning.
 */
import { NEWEST_KNOWN_NOMAD_LINE, NEWEST_NOMAD_RULES, nomadRulesFor, type NomadRules } from '../../machines/nomadRules.js';
import { readClusterVersion } from '../nomad/clusterVersion.js';
import type { NomadClient } from '../nomad/client.js';
import type { Logger } from '../logger.js';
import type { Clock, TimerHandle } from '../clock/index.js';
import { backoffDelay } from '../nomad/backoff.js';
import type { RandomSource } from '../random.js';

/** How many times the first reading is tried when Nomad cannot be reached, before today's rules are taken (about 15 s of back-off). */
const FIRST_READ_ATTEMPTS = 5;

export interface ClusterReleaseOptions {
  readonly nomad: Pick<NomadClient, 'agentSelf' | 'agentMembers' | 'listNodes'>;
  /** For the back-off between first readings. */
  readonly clock: Clock;
  /** Jitter of that back-off (default: processRandom). */
  readonly random?: RandomSource | undefined;
  readonly logger: Logger;
  /** The cluster's release as the user states it ("1.6.3"): never asked then. */
  readonly version?: string | undefined;
  /** A warning for the user (an unknown release, a release that cannot be read). */
  readonly warn?: (message: string) => void;
  /** The rules changed (another release after a reconnect). */
  readonly onChange?: (rules: NomadRules) => void;
}

export class ClusterRelease {
  private current: NomadRules | undefined;
  private readonly known: Promise<NomadRules>;
  private settle: (rules: NomadRules) => void = () => undefined;
  private reading: Promise<void> | undefined;
  private closed = false;
  private attempts = 0;
  private retry: TimerHandle | undefined;

  constructor(private readonly options: ClusterReleaseOptions) {
    this.known = new Promise((resolve) => {
      this.settle = resolve;
    });
    if (options.version !== undefined) this.adopt(options.version, 'the supervisor options');
    else void this.refresh();
  }

  /** The rules in force, once the release is known. */
  get rules(): NomadRules | undefined {
    return this.current;
  }

  /** Resolves with the rules once the release is known (at once when it is). */
  whenKnown(): Promise<NomadRules> {
    return this.known;
  }

  /** Asks the cluster again (after a reconnect); one question at a time. */
  refresh(): Promise<void> {
    if (this.options.version !== undefined || this.closed) return Promise.resolve();
    this.reading ??= readClusterVersion(this.options.nomad)
      .then((reading) => {
        if (this.closed) return;
        this.attempts++;
        if (reading.version !== undefined) this.adopt(reading.version, reading.source);
        else if (this.current !== undefined) this.options.logger.debug("Nomad's version could not be read again; the rules stay", { version: this.current.version, problems: reading.problems });
        else if (reading.retryable && this.attempts < FIRST_READ_ATTEMPTS) this.askAgain(reading.problems);
        else {
          this.warn(`Nomad's version could not be read (${reading.problems.join('; ')}): judging by the rules of Nomad ${NEWEST_KNOWN_NOMAD_LINE}, the newest known`);
          this.use(NEWEST_NOMAD_RULES);
        }
      })
      .finally(() => {
        this.reading = undefined;
      });
    return this.reading;
  }

  close(): void {
    this.closed = true;
    if (this.retry !== undefined) this.options.clock.clearTimeout(this.retry);
    this.retry = undefined;
  }

  private askAgain(problems: readonly string[]): void {
    const delay = backoffDelay(this.attempts, this.options.random ? { random: this.options.random } : {});
    this.options.logger.debug("Nomad's version could not be read; asking again", { problems, attempt: this.attempts, retryInMs: Math.round(delay) });
    this.retry = this.options.clock.setTimeout(() => {
      this.retry = undefined;
      void this.refresh();
    }, delay);
  }

  private adopt(version: string, source: string): void {
    if (this.current?.version === version) return;
    const found = nomadRulesFor(version);
    if (!found.known) this.warn(found.warning);
    if (this.current !== undefined) this.options.logger.warn(`Nomad's version changed from ${this.current.version} to ${version}: allocations from now on are judged by its rules`, { source });
    else this.options.logger.info(`Nomad ${version}: judging by its rules`, { source });
    this.use(found.rules);
  }

  private use(rules: NomadRules): void {
    const first = this.current === undefined;
    this.current = rules;
    if (first) this.settle(rules);
    else this.options.onChange?.(rules);
  }

  private warn(message: string): void {
    this.options.logger.warn(message);
    this.options.warn?.(message);
  }
}
