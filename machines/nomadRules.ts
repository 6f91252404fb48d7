/**
 * The rules of Nomad's health judging that changed between releases, each written once with the
 * releases that brought it (read from the hashicorp/nomad tags v1.1.0 … v2.0.5 and main, 2.0.6-dev):
 * client/allochealth/tracker.go, client/allocrunner/health_hook.go, client/allocrunner/taskrunner,
 * nomad/deploymentwatcher and the schedulers. A cluster is judged by the rules of its own release.
 */
import { compareNomadVersions, hasChange, parseNomadVersion, type NomadVersion } from './nomadVersion.js';

interface RuleDefinition {
  /** The first release of each release line that has it. */
  readonly since: readonly string[];
  /** What Nomad does from then on (before: the opposite). */
  readonly change: string;
  /** Where in Nomad's code, and the pull request. */
  readonly source: string;
}

export const NOMAD_RULES = {
  poststartSuccessHealthy: {
    since: ['1.1.13', '1.2.7', '1.3.0'],
    change: 'a poststart task that exited successfully is skipped; before, its exit failed the allocation at once',
    source: 'client/allochealth/tracker.go watchTaskEvents (#11945)',
  },
  mixedCanaryAutoPromote: {
    since: ['1.1.13', '1.2.7', '1.3.0'],
    change: 'auto_promote looks only at the groups with canaries; before, any group without auto_promote (a rolling group too) kept the deployment waiting for a manual promotion',
    source: 'nomad/deploymentwatcher/deployment_watcher.go autoPromoteDeployment',
  },
  disconnectedClients: {
    since: ['1.3.0'],
    change: 'an allocation on a client that stops heartbeating is ClientStatus "unknown" for max_client_disconnect (1.8: disconnect.lost_after), and its tasks get a "Reconnected" event when the client returns; before, it was lost at once',
    source: 'scheduler reconciler, client/allocrunner/alloc_runner.go Reconnect',
  },
  healthyDeadlineWording: {
    since: ['1.3.2'],
    change: 'the unhealthy explanations name the healthy_deadline ("Task not running by healthy_deadline of 5m0s"); before, "Task not running by deadline"',
    source: 'client/allochealth/tracker.go taskHealthState.event (#13214)',
  },
  nomadServiceChecks: {
    since: ['1.4.0'],
    change: 'checks of services with provider = "nomad" are run by Nomad and count for health (GET /v1/allocation/:id/checks)',
    source: 'client/allochealth/tracker.go watchNomadEvents',
  },
  missingChecksFail: {
    since: ['1.4.5', '1.5.0'],
    change: 'every check of the group must be registered (names counted) before the checks count as passing; before, only the registered checks were looked at',
    source: 'client/allochealth/tracker.go evaluateConsulChecks (#15822)',
  },
  interpolatedCheckNames: {
    since: ['1.4.6', '1.5.1'],
    change: 'the expected check names are interpolated with the task environment (${NOMAD_*}, ${node.*}, ${attr.*}, ${meta.*}) before they are compared',
    source: 'client/allochealth/tracker.go watchConsulEvents, taskenv.InterpolateService (#16402)',
  },
  shutdownDelayPending: {
    since: ['1.5.0'],
    change: 'a task waiting for its shutdown_delay is pending ("Waiting for shutdown delay")',
    source: 'client/allocrunner/taskrunner/task_runner.go handleKill',
  },
  sidecarChecksBlock: {
    since: ['1.5.12', '1.6.5', '1.7.1', '1.8.0'],
    change: "a Connect sidecar's warning or critical check keeps the checks from passing; before, sidecar checks were not looked at",
    source: 'client/allochealth/tracker.go evaluateConsulChecks (#19334)',
  },
  systemJobDeployments: {
    since: ['1.11.0'],
    change: 'system jobs get the default update strategy and deployments, and their allocations are watched for health; before, the client never watched a system job',
    source: 'client/allocrunner/health_hook.go newAllocHealthWatcherHook, scheduler/scheduler_system.go',
  },
} as const satisfies Record<string, RuleDefinition>;

export type NomadRuleName = keyof typeof NOMAD_RULES;

/** Which of the rules a release has, and which release that is. */
export type NomadRules = { readonly [rule in NomadRuleName]: boolean } & { readonly version: string };

/** The oldest and the newest release lines whose code these rules were read from. */
export const OLDEST_KNOWN_NOMAD = '1.1.0';
export const NEWEST_KNOWN_NOMAD_LINE = '2.0';

const RULE_NAMES = Object.keys(NOMAD_RULES) as NomadRuleName[];

function rulesOf(version: NomadVersion): NomadRules {
  const rules: Record<string, boolean | string> = { version: version.text };
  for (const name of RULE_NAMES) rules[name] = hasChange(version, NOMAD_RULES[name].since);
  return rules as NomadRules;
}

/** Today's Nomad: every rule. */
export const NEWEST_NOMAD_RULES: NomadRules = rulesOf(parseNomadVersion(`${NEWEST_KNOWN_NOMAD_LINE}.0`) as NomadVersion);

export type RulesFor =
  | { readonly known: true; readonly rules: NomadRules }
  /** Newer than any release read, or older: judged by the newest (oldest) rules known, and why. */
  | { readonly known: false; readonly rules: NomadRules; readonly warning: string };

/**
 * The rules of the release `text` names. A release newer than the newest line read gets today's
 * rules, one older than the oldest the oldest's, each with a warning; text that is no version
 * gets today's rules with a warning.
 */
export function nomadRulesFor(text: string): RulesFor {
  const version = parseNomadVersion(text);
  if (version === null) {
    return { known: false, rules: NEWEST_NOMAD_RULES, warning: `Nomad version ${JSON.stringify(text)} is not a version: judging by the rules of Nomad ${NEWEST_KNOWN_NOMAD_LINE}, the newest known` };
  }
  const newest = parseNomadVersion(`${NEWEST_KNOWN_NOMAD_LINE}.999999`) as NomadVersion;
  if (compareNomadVersions(version, newest) > 0) {
    return { known: false, rules: { ...NEWEST_NOMAD_RULES, version: version.text }, warning: `Nomad ${version.text} is newer than any release Warden knows (up to ${NEWEST_KNOWN_NOMAD_LINE}.x): judging by the rules of ${NEWEST_KNOWN_NOMAD_LINE}` };
  }
  const oldest = parseNomadVersion(OLDEST_KNOWN_NOMAD) as NomadVersion;
  if (compareNomadVersions(version, oldest) < 0) {
    return { known: false, rules: rulesOf(version), warning: `Nomad ${version.text} is older than any release Warden knows (from ${OLDEST_KNOWN_NOMAD}): judging by the rules of ${OLDEST_KNOWN_NOMAD}` };
  }
  return { known: true, rules: rulesOf(version) };
}

/** Why `rules` cannot be a release's rules (a field missing or not a boolean), or null. */
export function nomadRulesProblem(rules: unknown): string | null {
  if (typeof rules !== 'object' || rules === null) return 'Nomad rules are not an object';
  const record = rules as Record<string, unknown>;
  if (typeof record.version !== 'string') return 'Nomad rules: version is not a string';
  for (const name of RULE_NAMES) if (typeof record[name] !== 'boolean') return `Nomad rules: ${name} is not a boolean`;
  return null;
}
