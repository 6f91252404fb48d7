/**
 * Clients that stop heartbeating, as Nomad's servers and clients play it (scheduler reconciler,
 * client/allocrunner/alloc_runner.go Reconnect; nomad/structs AllocStates):
 *
 * - From Nomad 1.3, an allocation whose group allows it (max_client_disconnect; disconnect.lost_after
 *   from 1.8) becomes ClientStatus `unknown`, with an AllocState saying when, and `lost` (desired
 *   stop) once that time has passed without the client; otherwise, and before 1.3, it is lost at once.
 * - While away, what the client does reaches no server: `whileAway` keeps it, with its times.
 * - Back, the client reports it all in one update, a `Reconnected` event on every task; the
 *   scheduler then records the client's status in AllocStates.
 *
 *   fake.clients.disconnect(alloc.ID);
 *   clock.advance(3_000); fake.clients.whileAway(alloc.ID, { main: started() });
 *   clock.advance(60_000); fake.clients.reconnect(alloc.ID);
 */
import type { Clock, TimerHandle } from '../../clock/index.js';
import type { Allocation, Job, TaskGroup } from '../../nomad/types.js';
import type { ClusterState } from './clusterState.js';
import { NomadApiError } from './errors.js';
import { rfc3339Nano } from './goText.js';
import type { JsonObject } from './jobSpec.js';
import type { TaskUpdate } from './taskEvents.js';
import type { FakeNomadFeatures } from './versionFeatures.js';

interface Away {
  /** What the client did meanwhile, in order, with when. */
  readonly held: { readonly at: number; readonly updates: Record<string, TaskUpdate> }[];
  readonly lostTimer: TimerHandle | undefined;
}

const CLIENT_STATUS_FIELD = 0;

/** How long the group keeps a disconnected client's allocation unknown, in ms; undefined: lost at once. */
function lostAfterMs(allocation: Allocation): number | undefined {
  const group = ((allocation.Job as Job | undefined)?.TaskGroups ?? []).find((candidate: TaskGroup) => candidate.Name === allocation.TaskGroup);
  const nanoseconds = group?.Disconnect?.LostAfter ?? group?.MaxClientDisconnect;
  return typeof nanoseconds === 'number' && nanoseconds > 0 ? nanoseconds / 1e6 : undefined;
}

export class ClientDisconnects {
  private readonly away = new Map<string, Away>();

  constructor(
    private readonly cluster: ClusterState,
    private readonly clock: Clock,
    private readonly features: Pick<FakeNomadFeatures, 'disconnectedClients'>,
  ) {}

  /** Whether the allocation's client is away. */
  isAway(allocId: string): boolean {
    return this.away.has(allocId);
  }

  /** The allocation's client stops heartbeating: unknown for its group's lost_after (Nomad 1.3+), else lost at once. */
  disconnect(allocId: string): Allocation {
    const allocation = this.require(allocId);
    const window = this.features.disconnectedClients ? lostAfterMs(allocation) : undefined;
    if (window === undefined) return this.markLost(allocId);
    if (this.away.has(allocId)) throw new NomadApiError(400, `allocation ${allocId}: its client is already away`);
    const lostTimer = this.clock.setTimeout(() => {
      if (this.away.has(allocId)) this.markLost(allocId);
    }, window);
    this.away.set(allocId, { held: [], lostTimer });
    return this.cluster.patchAllocation(
      allocId,
      { ClientStatus: 'unknown', ClientDescription: 'alloc is unknown since its node is disconnected', AllocStates: this.statesWith(allocation, 'unknown') },
      'PlanResult',
    );
  }

  /** What the client does while away (tasks starting, failing...), as of now: reported when it comes back. */
  whileAway(allocId: string, updates: Record<string, TaskUpdate>): void {
    const away = this.away.get(allocId);
    if (away === undefined) throw new NomadApiError(400, `allocation ${allocId}: its client is not away`);
    away.held.push({ at: this.clock.now(), updates });
  }

  /**
   * The client is back: what it did meanwhile and a `Reconnected` event on every task, in one client
   * update; then the scheduler records its status.
   */
  reconnect(allocId: string): Allocation {
    const away = this.away.get(allocId);
    if (away === undefined) throw new NomadApiError(400, `allocation ${allocId}: its client is not away`);
    this.away.delete(allocId);
    if (away.lostTimer !== undefined) this.clock.clearTimeout(away.lostTimer);
    const tasks = Object.keys(this.require(allocId).TaskStates ?? {});
    this.cluster.batch(() => {
      for (const { at, updates } of away.held) this.cluster.updateTasks(allocId, updates, { at });
      const reconnected: TaskUpdate = { events: [{ Type: 'Reconnected', DisplayMessage: 'Client reconnected' }] };
      this.cluster.updateTasks(allocId, Object.fromEntries(tasks.map((task) => [task, reconnected])));
    });
    const allocation = this.require(allocId);
    return this.cluster.patchAllocation(allocId, { AllocStates: this.statesWith(allocation, String(allocation.ClientStatus)) }, 'PlanResult');
  }

  /** The server gives the client up: lost, and stopped. */
  markLost(allocId: string): Allocation {
    const away = this.away.get(allocId);
    this.away.delete(allocId);
    if (away?.lostTimer !== undefined) this.clock.clearTimeout(away.lostTimer);
    const allocation = this.require(allocId);
    return this.cluster.patchAllocation(
      allocId,
      {
        ClientStatus: 'lost', ClientDescription: 'alloc is lost since its node is down', DesiredStatus: 'stop', DesiredDescription: 'alloc is lost since its node is down',
        AllocStates: this.statesWith(allocation, 'lost'),
      },
      'PlanResult',
    );
  }

  /** Clears the timers of clients still away. */
  stop(): void {
    for (const away of this.away.values()) if (away.lostTimer !== undefined) this.clock.clearTimeout(away.lostTimer);
    this.away.clear();
  }

  private statesWith(allocation: Allocation, value: string): JsonObject[] {
    const states = (allocation.AllocStates ?? []) as unknown as JsonObject[];
    return [...states, { Field: CLIENT_STATUS_FIELD, Value: value, Time: rfc3339Nano(this.clock.now()) }];
  }

  private require(allocId: string): Allocation {
    const allocation = this.cluster.allocation(allocId);
    if (allocation === undefined) throw new NomadApiError(404, 'alloc not found');
    return allocation;
  }
}
