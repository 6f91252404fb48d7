/**
 * The Nomad release the supervised cluster runs, and so the rules its allocations are judged by
 * (machines/nomadRules.ts). Asked once at the start, and again after every reconnect of the event
 * stream (the cluster may have been upgraded meanwhile); allocations admitted from then on are
 * judged by the new release's rules, those being judged keep theirs. A version given by the user
 * is taken as it is and never asked. A release that cannot be learnt, or one newer than any Warden
 * knows, is judged by today's rules, with a warning.
 */
import { NEWEST_KNOWN_NOMAD_LINE, NEWEST_NOMAD_RULES, nomadRulesFor, type NomadRules } from '../../machines/nomadRules.js';
import { readClusterVersion } from '../nomad/clusterVersion.js';
import type { NomadClient } from '../nomad/client.js';
import type { Logger } from '../logger.js';

export interface ClusterReleaseOptions {
  readonly nomad: Pick<NomadClient, 'agentSelf' | 'agentMembers' | 'listNodes'>;
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
        if (reading.version !== undefined) this.adopt(reading.version, reading.source);
        else if (this.current === undefined) {
          this.warn(`Nomad's version could not be read (${reading.problems.join('; ')}): judging by the rules of Nomad ${NEWEST_KNOWN_NOMAD_LINE}, the newest known`);
          this.use(NEWEST_NOMAD_RULES);
        } else this.options.logger.debug("Nomad's version could not be read again; the rules stay", { version: this.current.version, problems: reading.problems });
      })
      .finally(() => {
        this.reading = undefined;
      });
    return this.reading;
  }

  close(): void {
    this.closed = true;
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
