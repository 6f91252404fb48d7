/**
 * The scenarios the live health suites deploy: every job.hcl of the Nomad 1.1.2 recordings
 * (test/fixtures/nomad-1.1.2/scenarios), and the cases they lack (test/fixtures/nomad-1.1.2-live/
 * scenarios): healthy then failed, restarts after healthy and during the deadline (the 10-event cap
 * erases their early history), canaries awaiting promotion, auto_revert, two groups.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ObservedAllocation } from './healthObserver.js';

const FIXTURES = join(__dirname, '..', '..', 'fixtures');
export const RECORDED_SCENARIOS = join(FIXTURES, 'nomad-1.1.2', 'scenarios');
export const LIVE_SCENARIOS = join(FIXTURES, 'nomad-1.1.2-live', 'scenarios');

export interface LiveScenario {
  readonly name: string;
  /** The folder its job.hcl comes from. */
  readonly dir: string;
  /** job.hcl, then job.v1.hcl…: each registered once Nomad has settled the previous version's deployment. */
  readonly versions: readonly string[];
  /** Stop the job (no purge) as soon as its allocation's tasks run (stopped_while_waiting). */
  readonly stopWhenRunning?: boolean;
  /** The gates run with --fail-fast (placement_failure: its deployment never ends by itself). */
  readonly failFast?: boolean;
  /**
   * When Nomad is done with it: its newest deployment ended or awaiting promotion (default), its
   * allocations over (no deployment: batch), or its placement failed (the deployment runs on).
   */
  readonly done?: 'deployment' | 'allocations-over' | 'placement-failed';
  /** What else must have happened before the late watch and gate start. */
  readonly settled?: (allocations: readonly ObservedAllocation[]) => boolean;
  /** The version Nomad ends on, when it registers one itself (auto_revert). */
  readonly finalVersion?: number;
}

function versionsIn(dir: string): string[] {
  const versions = [readFileSync(join(dir, 'job.hcl'), 'utf8')];
  for (let v = 1; existsSync(join(dir, `job.v${v}.hcl`)); v++) versions.push(readFileSync(join(dir, `job.v${v}.hcl`), 'utf8'));
  return versions;
}

/** Restarts every task of the allocation has gone through (as last seen). */
const restartsOf = (allocation: ObservedAllocation): number => Math.min(...Object.values(allocation.latest.TaskStates ?? {}).map((state) => state.Restarts ?? 0));

/** Enough restarts that Nomad's 10-event cap has erased the allocation's first events. */
const historyCapped = (allocations: readonly ObservedAllocation[]): boolean => allocations.length > 0 && allocations.every((allocation) => restartsOf(allocation) >= 4);

type Extra = Omit<LiveScenario, 'name' | 'dir' | 'versions'>;

function recorded(name: string, extra: Extra = {}): LiveScenario {
  return { name, dir: RECORDED_SCENARIOS, versions: versionsIn(join(RECORDED_SCENARIOS, name)), ...extra };
}

function live(name: string, extra: Extra = {}): LiveScenario {
  return { name, dir: LIVE_SCENARIOS, versions: versionsIn(join(LIVE_SCENARIOS, name)), ...extra };
}

/** The shared recordings' jobs. deadline_not_running's mock_driver is not in a release build: its raw_exec twin stands in. */
export const RECORDED: readonly LiveScenario[] = [
  recorded('healthy_task_states'),
  recorded('failed_task'),
  recorded('restart_before_min_healthy'),
  live('deadline_not_running'),
  recorded('stopped_while_waiting', { stopWhenRunning: true }),
  recorded('placement_failure', { failFast: true, done: 'placement-failed' }),
  recorded('rolling_update'),
  recorded('batch_job', { done: 'allocations-over' }),
  recorded('prestart_sidecar_lifecycle'),
  recorded('manual_health'),
  recorded('many_allocs'),
];

/** The cases the recordings lack. */
export const CASES: readonly LiveScenario[] = [
  live('healthy_then_failed', { settled: (allocations) => allocations.every((a) => a.latest.ClientStatus === 'failed') }),
  live('restart_after_healthy', { settled: historyCapped }),
  live('deadline_while_restarting', { settled: historyCapped }),
  live('canary_awaiting_promotion'),
  live('auto_revert', { finalVersion: 2 }),
  live('two_groups'),
];

/** Job IDs as the recordings named them: the scenario with dashes. */
export function jobName(scenario: Pick<LiveScenario, 'name'>): string {
  return scenario.name.replace(/_/g, '-');
}
