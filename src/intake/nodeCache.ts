/**
 * The client nodes whose records interpolate check names (`${NOMAD_DC}`, `${attr.*}`, `${meta.*}`...):
 * each read once (GET /v1/node/:id, which needs node:read), kept in a bounded memory. A failed read
 * is remembered as failed, so one node's refusal costs one request, not one per allocation.
 */
import type { NomadClient } from '../nomad/client.js';
import type { NomadNode } from '../nomad/types.js';
import { BoundedHistory } from '../boundedHistory.js';
import { errorMessage } from '../errorMessage.js';

export type NodeReading = { readonly node: NomadNode } | { readonly problem: string };

export class NodeCache {
  private readonly known: BoundedHistory<NodeReading>;
  private readonly reading = new Map<string, Promise<NodeReading>>();

  constructor(
    private readonly nomad: Pick<NomadClient, 'getNode'>,
    capacity = 1_024,
  ) {
    this.known = new BoundedHistory(capacity);
  }

  /** The node as read before, if it was. */
  cached(nodeId: string): NodeReading | undefined {
    return this.known.get(nodeId);
  }

  /** The node, read once however many allocations ask at the same time. */
  read(nodeId: string): Promise<NodeReading> {
    const known = this.known.get(nodeId);
    if (known !== undefined) return Promise.resolve(known);
    let pending = this.reading.get(nodeId);
    if (pending === undefined) {
      pending = this.nomad.getNode(nodeId).then(
        ({ body }) => ({ node: body }),
        (error: unknown) => ({ problem: `reading node ${nodeId} failed: ${errorMessage(error)}` }),
      );
      pending.then((reading) => {
        this.reading.delete(nodeId);
        this.known.set(nodeId, reading);
      }, () => undefined);
      this.reading.set(nodeId, pending);
    }
    return pending;
  }

  /** Forgets every reading (the cluster may have changed: a reconnect). */
  clear(): void {
    this.known.clear();
  }
}
