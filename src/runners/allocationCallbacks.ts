import type { Clock } from '../clock/index.js';
import { nanoTimeToMs } from '../health/nomadTime.js';
import type { Allocation } from '../nomad/types.js';
import { failureMessage } from './taskTrouble.js';

/**
 * The allocation callbacks a runner manager (a code-execution service keeping a pool of runner
 * allocations) relies on, with the semantics of Poseidon's WatchEventStream
 * (internal/nomad/event_stream_handling.go):
 * - `onNew(alloc, startupMs)` once, when an allocation goes from pending to running while its
 *   desired status is run, with the time since it was seen pending;
 * - `onDeleted(alloc)` once, when a running allocation's desired status becomes stop (or evict),
 *   or when it ends (complete, lost) without a failure;
 * - `onFailed(alloc, message)` once for a failed allocation, with what failed it in Nomad's words
 *   (taskTrouble.ts failureMessage);
 * - updates whose ModifyTime is older than the subscription's start are ignored: Nomad replays a
 *   buffered batch on subscribe, and it says nothing new.
 * Only allocations first seen pending with desired run are followed (as Poseidon does); repeated
 * updates with the same client and desired status are ignored.
 */
export interface AllocationCallbacks {
  onNew(alloc: Allocation, startupMs: number): void;
  onDeleted(alloc: Allocation): void;
  onFailed(alloc: Allocation, message: string): void;
}

export interface RunnerAllocationTrackerOptions {
  clock: Clock;
  /** Epoch ms; updates modified before it are ignored. Defaults to the clock's now. */
  since?: number;
}

interface Followed {
  clientStatus: string | undefined;
  desiredStatus: string | undefined;
  pendingSince: number;
  announced: boolean;
}

export class RunnerAllocationTracker {
  private readonly followed = new Map<string, Followed>();
  private readonly since: number;

  constructor(
    private readonly callbacks: AllocationCallbacks,
    private readonly options: RunnerAllocationTrackerOptions,
  ) {
    this.since = options.since ?? options.clock.now();
  }

  /** Number of allocations followed right now (ended ones are forgotten). */
  get size(): number {
    return this.followed.size;
  }

  handle(alloc: Allocation): void {
    if (alloc.ModifyTime !== undefined && nanoTimeToMs(alloc.ModifyTime) < this.since) return;
    const known = this.followed.get(alloc.ID);
    if (!known) {
      if (alloc.ClientStatus === 'pending' && alloc.DesiredStatus === 'run') this.follow(alloc);
      return;
    }
    if (known.clientStatus === alloc.ClientStatus && known.desiredStatus === alloc.DesiredStatus) return;
    known.clientStatus = alloc.ClientStatus;
    known.desiredStatus = alloc.DesiredStatus;
    switch (alloc.ClientStatus) {
      case 'running':
        if (alloc.DesiredStatus === 'run') this.announce(alloc, known);
        else this.end(alloc, known, () => this.callbacks.onDeleted(alloc));
        break;
      case 'failed':
        this.end(alloc, known, () => this.callbacks.onFailed(alloc, failureMessage(alloc)), true);
        break;
      case 'complete':
      case 'lost':
        this.end(alloc, known, () => this.callbacks.onDeleted(alloc));
        break;
      default:
        break;
    }
  }

  private follow(alloc: Allocation): void {
    this.followed.set(alloc.ID, {
      clientStatus: alloc.ClientStatus,
      desiredStatus: alloc.DesiredStatus,
      pendingSince: this.options.clock.now(),
      announced: false,
    });
  }

  private announce(alloc: Allocation, known: Followed): void {
    if (known.announced) return;
    known.announced = true;
    this.callbacks.onNew(alloc, this.options.clock.now() - known.pendingSince);
  }

  /** Forgets the allocation; reports it if it was announced, or always for a failure. */
  private end(alloc: Allocation, known: Followed, report: () => void, always = false): void {
    this.followed.delete(alloc.ID);
    if (known.announced || always) report();
  }
}
