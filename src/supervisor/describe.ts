import type { EvaluationOutcome } from '../../machines/evaluationOutcome.js';
import type { AllocationRef, StateChange, VerdictRecord } from './types.js';
import type { DeploymentFailureRule, DeploymentResult } from '../deployments/deploymentWatch.js';

/**
 * One line per supervisor happening, for people (`warden watch`, `warden demo`, `warden gate`)
 * and for machines (`--json`: one JSON object a line). Colour is optional and only ever added
 * around words, so the plain text is the same with or without it.
 */

export interface DescribeOptions {
  /** ANSI colours (for a terminal). */
  color?: boolean;
  /** Time of day only (HH:MM:SS.mmm, UTC) instead of the full ISO timestamp. */
  shortTime?: boolean;
}

type Tone = 'good' | 'bad' | 'dim' | 'note' | 'bold';
const ANSI: Record<Tone, [string, string]> = {
  good: ['\u001b[32m', '\u001b[39m'],
  bad: ['\u001b[31m', '\u001b[39m'],
  dim: ['\u001b[2m', '\u001b[22m'],
  note: ['\u001b[36m', '\u001b[39m'],
  bold: ['\u001b[1m', '\u001b[22m'],
};

export function paint(text: string, tone: Tone, options: DescribeOptions): string {
  if (!options.color) return text;
  const [open, close] = ANSI[tone];
  return `${open}${text}${close}`;
}

/** ISO time with milliseconds, in UTC: stable in tests and comparable with Nomad's timestamps. */
export function formatTime(ms: number, options: DescribeOptions = {}): string {
  const iso = new Date(ms).toISOString();
  return options.shortTime ? iso.slice(11, 23) : iso;
}

export function allocationLabel(alloc: AllocationRef): string {
  return `${alloc.name ?? `${alloc.jobId}.${alloc.taskGroup}`} ${alloc.allocId.slice(0, 8)}`;
}

function reasonsText(reasons: Readonly<Record<string, string>>): string {
  return Object.entries(reasons)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([task, reason]) => `${task}: ${reason}`)
    .join('; ');
}

export function describeChange(change: StateChange, options: DescribeOptions = {}): string {
  return `${paint(formatTime(change.at, options), 'dim', options)}  ${allocationLabel(change.alloc)}  ${change.from} → ${change.to}`;
}

export function describeVerdict(record: VerdictRecord, options: DescribeOptions = {}): string {
  const { outcome } = record;
  const head = `${paint(formatTime(outcome.at, options), 'dim', options)}  ${allocationLabel(record.alloc)}  `;
  if ('stopped' in outcome) return `${head}${paint('stopped', 'note', options)} (desired status stop: not judged)`;
  if ('undetermined' in outcome) return `${head}${paint('undetermined', 'note', options)}  ${outcome.reason}`;
  // Nomad's own verdict, where the kept history could not decide: said so.
  const recorded = 'basis' in outcome ? `  (Nomad's recorded verdict: the history that decided it is gone)` : '';
  if (outcome.healthy) return `${head}${paint('healthy', 'good', options)}${recorded}`;
  const reasons = reasonsText(outcome.reasons);
  const why = reasons !== '' ? `  ${reasons}` : recorded === '' ? ' (allocation failed)' : '';
  return `${head}${paint('unhealthy', 'bad', options)}${why}${recorded}`;
}

export function changeJson(change: StateChange): string {
  return JSON.stringify({ type: 'state', time: formatTime(change.at), ...change.alloc, from: change.from, to: change.to });
}

export function verdictJson(record: VerdictRecord): string {
  const { outcome } = record;
  const base = { time: formatTime(outcome.at), ...record.alloc };
  if ('stopped' in outcome) return JSON.stringify({ type: 'verdict', verdict: 'stopped', ...base });
  if ('undetermined' in outcome) return JSON.stringify({ type: 'verdict', verdict: 'undetermined', ...base, reason: outcome.reason });
  return JSON.stringify({
    type: 'verdict',
    verdict: outcome.healthy ? 'healthy' : 'unhealthy',
    ...base,
    reasons: outcome.reasons,
    ...('basis' in outcome ? { basis: outcome.basis } : {}),
  });
}

/** Indented lines explaining an evaluation's outcome. */
export function describeEvaluation(outcome: EvaluationOutcome, options: DescribeOptions = {}): string[] {
  const [head = '', ...rest] = outcome.message.split('\n');
  return [paint(head, outcome.ok ? 'good' : 'bad', options), ...rest.map((line) => `  ${line}`)];
}

/** The gate's report: a headline, then each unhealthy allocation with its per-task reasons. */
/** The failure rules whose headline ("N allocations unhealthy") does not itself say what ended the deployment. */
const RULE_NOTES: Partial<Record<DeploymentFailureRule, string>> = {
  'fail-fast': '--fail-fast: the first unhealthy allocation ends the gate',
  placement: '--fail-fast: a group that cannot be placed ends the gate',
};

export function describeDeployment(result: DeploymentResult, options: DescribeOptions = {}): string[] {
  const job = paint(`${result.jobId} version ${result.version}`, 'bold', options);
  if (result.ok && result.awaitingPromotion) {
    return [
      `${paint('⏸', 'note', options)} ${job}: ${result.healthy.length} canary allocation(s) healthy, awaiting promotion (nomad deployment promote ${result.deploymentId})`,
    ];
  }
  if (result.ok) return [`${paint('✔', 'good', options)} ${job}: deployment healthy, ${result.healthy.length} allocation(s) healthy`, ...unjudgedLines(result)];
  const lines = [`${paint('✘', 'bad', options)} ${job}: ${result.reason}`];
  for (const alloc of result.unhealthy) {
    lines.push(`  ${[alloc.name, alloc.allocId].filter(Boolean).join(' ')}`);
    const tasks = Object.entries(alloc.reasons).sort(([a], [b]) => a.localeCompare(b));
    if (alloc.basis === 'nomad') lines.push(`    (Nomad's recorded verdict: the history that decided it is gone${tasks.length === 0 ? ', its reasons with it' : ''})`);
    else if (tasks.length === 0) lines.push('    (the allocation failed; Nomad gave no per-task reason)');
    for (const [task, reason] of tasks) lines.push(`    ${task}: ${reason}`);
  }
  if (result.evaluation) lines.push(...describeEvaluation(result.evaluation, options).map((line) => `  ${line}`));
  const note = RULE_NOTES[result.rule];
  if (note) lines.push(`  ${note}`);
  return [...lines, ...unjudgedLines(result)];
}

/** One line per reason Warden left allocations of the deployment unjudged (Nomad's word alone stands for them). */
function unjudgedLines(result: DeploymentResult): string[] {
  const byReason = new Map<string, number>();
  for (const alloc of result.unjudged ?? []) byReason.set(alloc.reason, (byReason.get(alloc.reason) ?? 0) + 1);
  return [...byReason].map(([reason, count]) => `  ${count} allocation(s) not judged by Warden: ${reason}`);
}

/** The deployment result as one `--json` record. */
export function deploymentRecord(result: DeploymentResult): { type: 'deployment' } & DeploymentResult {
  return { type: 'deployment', ...result };
}
