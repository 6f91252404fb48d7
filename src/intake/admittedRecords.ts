/**
 * The allocations the intake has admitted, one record each in one table, which the health registry
 * keeps its machines in too (a MachineTable): an allocation is one entry in one map, found once per
 * update, and forgotten everywhere at once.
 */
import type { HealthPolicy } from '../../machines/allocationHealthTypes.js';
import type { MachineEntry, MachineTable } from '../health/registry.js';
import type { NomadDecision } from '../health/nomadDecision.js';
import type { TaskGroup } from '../nomad/types.js';
import type { AllocationRef } from './types.js';

/** Judged (or waiting for its client to report it, before which Nomad does not watch it either). */
export interface Admitted {
  /** Its `allocId` is the one string the allocation's ID is kept as (table, horizon and book keys). */
  readonly ref: AllocationRef;
  readonly group: TaskGroup;
  readonly policy: HealthPolicy;
  readonly jobVersion: number | undefined;
  /**
   * True until its first sight with something to judge (its client may not have reported it yet:
   * Nomad is not watching it either).
   */
  opening: boolean;
  /** Where judging is to start after an in-place update (for the opening sight). */
  readonly rewatchedFrom: number | undefined;
  /**
   * Its kept history cannot decide (Nomad's cap of 10 events a task) and its client has not recorded
   * a decision yet: it waits for Nomad's (by its deadline at the latest), with no machine.
   */
  awaitingNomad: boolean;
  /** The decision its client recorded, once a copy carried one: checked against Warden's verdict. */
  nomad: NomadDecision | undefined;
  /** Its health machine, while one runs (the registry's: set and cleared through the MachineTable side). */
  machine: MachineEntry | undefined;
}

export class AdmittedRecords implements MachineTable {
  private readonly records = new Map<string, Admitted>();
  private machines = 0;
  /**
   * The record found last: one update asks for its allocation five or six times (the intake, the
   * registry's feed and verdict, the release), and each lookup in a table of every allocation is a
   * walk through memory the update has not touched yet.
   */
  private last: Admitted | undefined;

  // ---- the intake's side ----

  record(allocationId: string): Admitted | undefined {
    const last = this.last;
    if (last !== undefined && last.ref.allocId === allocationId) return last;
    const found = this.records.get(allocationId);
    if (found !== undefined) this.last = found;
    return found;
  }

  /** Admits an allocation, keyed by its ref's allocId (an earlier record of it must have been removed: see remove). */
  admit(record: Admitted): void {
    const { allocId } = record.ref;
    if (this.records.has(allocId)) throw new Error(`allocation ${allocId} is admitted already`);
    this.records.set(allocId, record);
  }

  /** Forgets an allocation whose machine has been dropped (the registry lets go of what it waited for then). */
  remove(allocationId: string): void {
    const record = this.record(allocationId);
    if (record?.machine !== undefined) throw new Error(`allocation ${allocationId} still has a machine`);
    // record() has just made it the last found.
    this.last = undefined;
    this.records.delete(allocationId);
  }

  all(): IterableIterator<Admitted> {
    return this.records.values();
  }

  // ---- the registry's side (MachineTable) ----

  get size(): number {
    return this.machines;
  }

  get(allocationId: string): MachineEntry | undefined {
    return this.record(allocationId)?.machine;
  }

  has(allocationId: string): boolean {
    return this.get(allocationId) !== undefined;
  }

  set(allocationId: string, entry: MachineEntry): void {
    const record = this.record(allocationId);
    if (record === undefined) throw new Error(`a machine for allocation ${allocationId}, which is not admitted`);
    if (record.machine === undefined) this.machines++;
    record.machine = entry;
  }

  delete(allocationId: string): boolean {
    const record = this.record(allocationId);
    if (record?.machine === undefined) return false;
    record.machine = undefined;
    this.machines--;
    return true;
  }
}
