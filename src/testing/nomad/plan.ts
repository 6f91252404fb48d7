/**
 * What a scheduler pass hands Nomad's plan applier (ClusterState.applyPlan): allocations to place
 * (a replacement names the one it replaces, a reschedule carries its tracker), allocations to stop
 * with the reason Nomad gives, allocations moved in place to the job's current version, and the
 * follow-up evaluations failed allocations wait on. Both the scripted cluster and the acting
 * scheduler write their plans with it.
 */
import type { JsonObject } from './jobSpec.js';

export interface PlanPlacement {
  group: string;
  /** `<job>.<group>[<index>]`. */
  name: string;
  canary?: boolean;
  /** The allocation this one replaces (its NextAllocation is set in the same plan). */
  previousAllocation?: string;
  rescheduleTracker?: JsonObject | null;
}

export interface PlanStop {
  allocId: string;
  /** DesiredDescription, one of STOP_REASONS. */
  description: string;
}

export interface PlanInput {
  /** The evaluation the plan is for. */
  evalId: string;
  place?: PlanPlacement[];
  stop?: PlanStop[];
  /** Allocations kept, now on the job's current version. */
  inPlace?: string[];
  /** Allocation ID → the follow-up evaluation that will reschedule it (FollowupEvalID). */
  followups?: Readonly<Record<string, string>>;
}

/** The DesiredDescription Nomad 1.1.2's scheduler gives a stopped allocation (scheduler/reconcile.go). */
export const STOP_REASONS = {
  notNeeded: 'alloc not needed due to job update',
  updated: 'alloc is being updated due to job update',
  rescheduled: 'alloc was rescheduled because it failed',
  migrated: 'alloc is being migrated',
  lost: 'alloc is lost since its node is down',
} as const;

/** The index in an allocation's name, `web.app[3]` → 3. */
export function nameIndex(name: unknown): number {
  return Number(/\[(\d+)\]$/.exec(String(name ?? ''))?.[1] ?? 0);
}

/** The first `count` names of a group no allocation that is to run holds, lowest index first. */
export function freeNames(jobId: string, group: string, allocs: readonly JsonObject[], count: number): string[] {
  const used = new Set(allocs.filter((a) => a.DesiredStatus === 'run').map((a) => a.Name));
  const names: string[] = [];
  for (let slot = 0; names.length < count; slot++) {
    const name = `${jobId}.${group}[${slot}]`;
    if (!used.has(name)) names.push(name);
  }
  return names;
}
