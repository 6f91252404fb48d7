/**
 * Nomad's own service checks as a Nomad 1.4+ client keeps them (client/allocrunner/checks_hook.go,
 * client/serviceregistration/checks): every check of the allocation's provider = "nomad" services
 * has a result, a pending stub ("nomad: waiting to run") until the test sets one, served by
 * GET /v1/allocation/:id/checks as a map of check ID to api.CheckQueryResult. The fake runs no
 * check itself: the test says what each one last reported.
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../../clock/index.js';
import { nanoTimeToMs } from '../../health/nomadTime.js';
import type { Allocation, Service, TaskGroup } from '../../nomad/types.js';
import type { NomadCheckResult } from '../../nomadChecks/checkResults.js';
import type { ClusterState } from './clusterState.js';

/** Which check: its task ('' or absent for a group service), service and name. */
export interface FakeCheckIdentity {
  readonly task?: string;
  readonly service: string;
  readonly check: string;
}

export interface FakeCheckOutcome {
  readonly status: NomadCheckResult['Status'];
  readonly output?: string;
  /** HTTP checks: the answer's status code. */
  readonly statusCode?: number;
}

interface DeclaredCheck {
  readonly task: string;
  readonly service: string;
  readonly check: string;
  readonly mode: NomadCheckResult['Mode'];
}

const keyOf = (task: string, service: string, check: string): string => `${task}\u0000${service}\u0000${check}`;

/** The Nomad-provider checks of a group: group services under task '', then each task's. */
function declaredChecks(group: TaskGroup): DeclaredCheck[] {
  const of = (task: string, services: readonly Service[] | null | undefined): DeclaredCheck[] =>
    (services ?? [])
      .filter((service) => service.Provider === 'nomad')
      .flatMap((service) =>
        (service.Checks ?? []).map((check) => ({
          task,
          service: service.Name,
          check: check.Name,
          // structs.GetCheckMode: on_update = "ignore" (the check's, else its service's) is readiness.
          mode: (check.OnUpdate || service.OnUpdate) === 'ignore' ? ('readiness' as const) : ('healthiness' as const),
        })),
      );
  return [...of('', group.Services), ...(Array.isArray(group.Tasks) ? group.Tasks : []).flatMap((task) => of(task.Name, task.Services))];
}

/** A stable 64-hex-digit ID per check, as Nomad's NomadCheckID hashes the allocation, group and check. */
function checkId(allocId: string, group: string, declared: DeclaredCheck): string {
  return createHash('sha256').update([allocId, group, declared.task, declared.service, declared.check].join('\u0000')).digest('hex');
}

export class FakeNomadChecks {
  private readonly outcomes = new Map<string, Map<string, FakeCheckOutcome & { at: number }>>();

  constructor(
    private readonly cluster: ClusterState,
    private readonly clock: Clock,
  ) {}

  /** Sets what one check of an allocation last reported. */
  set(allocId: string, which: FakeCheckIdentity, outcome: FakeCheckOutcome): void {
    const mine = this.outcomes.get(allocId) ?? new Map<string, FakeCheckOutcome & { at: number }>();
    mine.set(keyOf(which.task ?? '', which.service, which.check), { ...outcome, at: this.clock.now() });
    this.outcomes.set(allocId, mine);
  }

  /** Every check of an allocation's group set to `status` (success: all passing). */
  setAll(allocId: string, status: NomadCheckResult['Status']): void {
    for (const declared of this.declared(allocId)) this.set(allocId, declared, { status });
  }

  /** The answer to GET /v1/allocation/:id/checks, or undefined for an unknown allocation. */
  results(allocId: string): Record<string, NomadCheckResult> | undefined {
    const allocation = this.cluster.allocation(allocId);
    if (allocation === undefined) return undefined;
    const mine = this.outcomes.get(allocId);
    const created = Math.floor(nanoTimeToMs(allocation.CreateTime ?? 0) / 1000);
    const entries = this.declared(allocId, allocation).map((declared): [string, NomadCheckResult] => {
      const id = checkId(allocId, allocation.TaskGroup, declared);
      const outcome = mine?.get(keyOf(declared.task, declared.service, declared.check));
      const result: NomadCheckResult = {
        ID: id,
        Mode: declared.mode,
        Status: outcome?.status ?? 'pending',
        ...(outcome?.statusCode === undefined ? {} : { StatusCode: outcome.statusCode }),
        Output: outcome?.output ?? (outcome === undefined ? 'nomad: waiting to run' : ''),
        Timestamp: outcome === undefined ? created : Math.floor(outcome.at / 1000),
        Group: allocation.Name ?? '',
        ...(declared.task === '' ? {} : { Task: declared.task }),
        Service: declared.service,
        Check: declared.check,
      };
      return [id, result];
    });
    return Object.fromEntries(entries);
  }

  private declared(allocId: string, allocation: Allocation | undefined = this.cluster.allocation(allocId)): DeclaredCheck[] {
    const group = (allocation?.Job?.TaskGroups ?? []).find((candidate) => candidate.Name === allocation?.TaskGroup);
    return group === undefined ? [] : declaredChecks(group);
  }
}
