import type { CheckView } from '../../machines/allocationHealthTypes.js';
import type { ConsulCheckFanOut } from '../consul/checkFanOut.js';
import { hasNomadProviderChecks } from '../consul/checkViews.js';
import type { TaskGroup } from '../nomad/types.js';
import type { NomadCheckPoller } from './checkPoller.js';

/**
 * Where the service checks of an allocation judged by them come from: Nomad's own (provider =
 * "nomad"), polled per allocation; else Consul's, from the one datacenter-wide query when there is
 * a Consul source. Nomad requires one provider for all the services of a group.
 */
export class ServiceCheckSources {
  constructor(
    private readonly nomad: NomadCheckPoller,
    private readonly consul: ConsulCheckFanOut | undefined,
  ) {}

  /** Why this group's checks cannot be read here (no Consul source for Consul checks), or undefined. */
  unavailable(group: Pick<TaskGroup, 'Services' | 'Tasks'>): string | undefined {
    return hasNomadProviderChecks(group) || this.consul !== undefined ? undefined : 'a Consul source this supervisor does not have';
  }

  /** Starts following an allocation's checks; returns its views as known now. */
  follow(allocationId: string, namespace: string | undefined, group: Pick<TaskGroup, 'Name' | 'Services' | 'Tasks'>): CheckView[] {
    if (hasNomadProviderChecks(group)) return this.nomad.follow(allocationId, namespace);
    return this.consul?.follow(allocationId, group) ?? [];
  }

  /**
   * Whether this group's checks are a state Nomad's client samples on its own 500 ms looks
   * (Consul's: see HealthRegistry.updateChecks) rather than results Warden polls itself.
   */
  sampled(group: Pick<TaskGroup, 'Services' | 'Tasks'>): boolean {
    return !hasNomadProviderChecks(group);
  }

  forget(allocationId: string): void {
    this.nomad.forget(allocationId);
    this.consul?.forget(allocationId);
  }

  stop(): void {
    this.nomad.stop();
  }
}
