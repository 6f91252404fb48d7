/**
 * The listing half of "list, then watch": which allocations an event-stream subscription
 * watches, and their current versions, fetched after a reconnect so that nothing that changed
 * during the outage is lost.
 */
import type { NomadClient } from './client.js';
import { NomadDecodeError, NomadHttpError } from './errors.js';
import type { Allocation, AllocationListStub } from './types.js';

/** Allocations covered by a set of topics: all of them, those of some jobs, or none. */
export type ResyncScope = { kind: 'none' } | { kind: 'all' } | { kind: 'jobs'; jobIds: string[] };

/**
 * `Allocation` / `Allocation:*` / `*` watch every allocation; `Allocation:<key>` those of job
 * <key> (Nomad also matches a deployment or allocation ID there; those keys list nothing).
 */
export function resyncScope(topics: readonly string[]): ResyncScope {
  const jobIds = new Set<string>();
  for (const topic of topics) {
    const colon = topic.indexOf(':');
    const name = colon === -1 ? topic : topic.slice(0, colon);
    const key = colon === -1 ? '*' : topic.slice(colon + 1);
    if (name !== 'Allocation' && name !== '*') continue;
    if (key === '*') return { kind: 'all' };
    jobIds.add(key);
  }
  return jobIds.size === 0 ? { kind: 'none' } : { kind: 'jobs', jobIds: [...jobIds] };
}

export interface ListingOptions {
  namespace?: string;
  signal: AbortSignal;
  /** True when this version (or a newer one) was already delivered: no need to fetch it. */
  isKnown: (id: string, modifyIndex: number) => boolean;
  /** Which listed allocations matter to the caller (default all): only those are fetched in full. */
  wanted?: (stub: AllocationListStub) => boolean;
  /** Parallel GETs of changed allocations (default 8). */
  concurrency?: number;
}

export interface Listing {
  /** X-Nomad-Index of the listing (highest of several). */
  index: number;
  /** IDs of every allocation listed; for scope `all`, every allocation that still exists. */
  listed: Set<string>;
  /** Full allocations that changed since last delivered, or were never delivered. */
  allocations: Allocation[];
  /** Allocations whose answer could not be decoded: skipped, to be reported. */
  undecodable: { id: string; error: NomadDecodeError }[];
}

async function listStubs(client: NomadClient, scope: ResyncScope, options: ListingOptions) {
  const { namespace, signal } = options;
  if (scope.kind === 'none') return { index: 0, stubs: [] as AllocationListStub[] };
  if (scope.kind === 'all' || namespace === '*') {
    const { body, meta } = await client.listAllocations({ namespace, signal });
    const wanted = scope.kind === 'jobs' ? new Set(scope.jobIds) : undefined;
    return { index: meta.lastIndex, stubs: wanted === undefined ? body : body.filter((stub) => wanted.has(stub.JobID)) };
  }
  let index = 0;
  const stubs: AllocationListStub[] = [];
  for (const jobId of scope.jobIds) {
    const { body, meta } = await client.jobAllocations(jobId, { namespace, signal, all: true });
    index = Math.max(index, meta.lastIndex);
    stubs.push(...body);
  }
  return { index, stubs };
}

/** Lists the scope's allocations, then fetches in full only those not yet delivered at that version. */
export async function listWatchedAllocations(client: NomadClient, scope: ResyncScope, options: ListingOptions): Promise<Listing> {
  const { index, stubs } = await listStubs(client, scope, options);
  const { wanted } = options;
  const changed = stubs.filter((stub) => (wanted === undefined || wanted(stub)) && !options.isKnown(stub.ID, stub.ModifyIndex));
  const allocations: Allocation[] = [];
  const undecodable: Listing['undecodable'] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let stub = changed[next++]; stub !== undefined; stub = changed[next++]) {
      try {
        const { body } = await client.getAllocation(stub.ID, { namespace: stub.Namespace, signal: options.signal });
        allocations.push(body);
      } catch (error) {
        // Garbage-collected between the listing and the GET: nothing left to deliver.
        if (error instanceof NomadHttpError && error.status === 404) continue;
        // One allocation that cannot be decoded (nested too deep, say) must not fail every listing,
        // and with it the stream, for good: it is skipped and reported instead.
        if (!(error instanceof NomadDecodeError)) throw error;
        undecodable.push({ id: stub.ID, error });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency ?? 8, changed.length) }, worker));
  // Deliver in index order, as the stream would have.
  allocations.sort((a, b) => a.ModifyIndex - b.ModifyIndex);
  return { index, listed: new Set(stubs.map((stub) => stub.ID)), allocations, undecodable };
}
