/**
 * What an evaluation came to, in the Nomad CLI's words (command/monitor.go, formatAllocMetrics):
 * success, or every task group that could not be placed with its placement metrics, and the
 * blocked evaluation left waiting for capacity. Pure: shared by the evaluation machine and the
 * command line.
 */

/** The fields of a Nomad AllocationMetric (an entry of Evaluation.FailedTGAllocs) read here. */
export interface AllocationMetricView {
  NodesEvaluated?: number;
  NodesFiltered?: number;
  NodesExhausted?: number;
  NodesAvailable?: Record<string, number> | null;
  ClassFiltered?: Record<string, number> | null;
  ConstraintFiltered?: Record<string, number> | null;
  ClassExhausted?: Record<string, number> | null;
  DimensionExhausted?: Record<string, number> | null;
  QuotaExhausted?: readonly string[] | null;
  CoalescedFailures?: number;
}

/**
 * The fields of a Nomad Evaluation the monitor reads, as GET /v1/evaluation/:id and Evaluation
 * events carry them. Nomad leaves empty fields out (BlockedEval, NextEval, FailedTGAllocs...).
 */
export interface EvaluationView {
  ID: string;
  Status: string;
  ModifyIndex?: number;
  JobID?: string;
  Namespace?: string;
  StatusDescription?: string;
  DeploymentID?: string;
  BlockedEval?: string;
  NextEval?: string;
  /** Nanoseconds to wait before NextEval runs. */
  Wait?: number;
  FailedTGAllocs?: Record<string, AllocationMetricView> | null;
}

/** One task group the scheduler could not place. */
export interface PlacementFailure {
  group: string;
  /** Allocations of the group left unplaced (CoalescedFailures + 1). */
  unplaced: number;
  metrics: AllocationMetricView;
  /** formatAllocMetrics' lines, without the leading indent. */
  explanation: string[];
}

export type EvaluationOutcome =
  | { ok: true; evalId: string; status: string; chain: string[]; message: string }
  | {
      ok: false;
      evalId: string;
      /** The evaluation's terminal status, or `not-found`. */
      status: string;
      chain: string[];
      failures: PlacementFailure[];
      /** The evaluation Nomad created to place the rest once capacity frees up. */
      blockedEval?: string;
      message: string;
    };

const TERMINAL = new Set(['complete', 'failed', 'canceled', 'cancelled']);

export function isTerminalEvaluation(evaluation: EvaluationView): boolean {
  return TERMINAL.has(evaluation.Status);
}

function sortedEntries<V>(record: Record<string, V> | null | undefined): [string, V][] {
  return Object.entries(record ?? {}).sort(([a], [b]) => a.localeCompare(b));
}

/** formatAllocMetrics, plus the node counts in one line so "evaluated / filtered / exhausted" is always said. */
function explainPlacementMetrics(metrics: AllocationMetricView): string[] {
  const lines: string[] = [];
  const evaluated = metrics.NodesEvaluated ?? 0;
  if (evaluated === 0) lines.push('* No nodes were eligible for evaluation');
  for (const [dc, available] of sortedEntries(metrics.NodesAvailable)) {
    if (available === 0) lines.push(`* No nodes are available in datacenter "${dc}"`);
  }
  lines.push(
    `* Nodes evaluated: ${evaluated}, filtered: ${metrics.NodesFiltered ?? 0}, exhausted: ${metrics.NodesExhausted ?? 0}`,
  );
  for (const [nodeClass, count] of sortedEntries(metrics.ClassFiltered)) {
    lines.push(`* Class "${nodeClass}": ${count} nodes excluded by filter`);
  }
  for (const [constraint, count] of sortedEntries(metrics.ConstraintFiltered)) {
    lines.push(`* Constraint "${constraint}": ${count} nodes excluded by filter`);
  }
  const exhausted = metrics.NodesExhausted ?? 0;
  if (exhausted > 0) lines.push(`* Resources exhausted on ${exhausted} nodes`);
  for (const [nodeClass, count] of sortedEntries(metrics.ClassExhausted)) {
    lines.push(`* Class "${nodeClass}" exhausted on ${count} nodes`);
  }
  for (const [dimension, count] of sortedEntries(metrics.DimensionExhausted)) {
    lines.push(`* Dimension "${dimension}" exhausted on ${count} nodes`);
  }
  for (const dimension of metrics.QuotaExhausted ?? []) lines.push(`* Quota limit hit "${dimension}"`);
  return lines;
}

/**
 * The outcome of a terminal evaluation, judged as Poseidon's checkEvaluation does: failed
 * placements make it a failure whatever the status; otherwise only `complete` is a success.
 */
export function evaluationOutcome(evaluation: EvaluationView, chain: readonly string[]): EvaluationOutcome {
  const failures = sortedEntries(evaluation.FailedTGAllocs).map(([group, metrics]): PlacementFailure => ({
    group,
    unplaced: (metrics.CoalescedFailures ?? 0) + 1,
    metrics,
    explanation: explainPlacementMetrics(metrics),
  }));
  const head = `Evaluation "${evaluation.ID}" finished with status "${evaluation.Status}"`;
  const judged = { evalId: evaluation.ID, status: evaluation.Status, chain: [...chain] };
  if (failures.length === 0) {
    if (evaluation.Status === 'complete') return { ok: true, ...judged, message: head };
    const reason = evaluation.StatusDescription ? `: ${evaluation.StatusDescription}` : '';
    return { ok: false, ...judged, failures, message: head + reason };
  }
  const lines = [`${head} but failed to place all allocations:`];
  for (const failure of failures) {
    const noun = failure.unplaced > 1 ? 'allocations' : 'allocation';
    lines.push(`Task Group "${failure.group}" (failed to place ${failure.unplaced} ${noun}):`);
    for (const line of failure.explanation) lines.push(`  ${line}`);
  }
  if (evaluation.BlockedEval) {
    lines.push(`Evaluation "${evaluation.BlockedEval}" waiting for additional capacity to place remainder`);
  }
  const blocked = evaluation.BlockedEval ? { blockedEval: evaluation.BlockedEval } : {};
  return { ok: false, ...judged, failures, ...blocked, message: lines.join('\n') };
}

export function evaluationNotFound(evalId: string, chain: readonly string[]): EvaluationOutcome {
  return { ok: false, evalId, status: 'not-found', chain: [...chain], failures: [], message: `No evaluation with id "${evalId}" found` };
}
