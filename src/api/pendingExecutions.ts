/**
 * Executions asked for (POST /runners/{id}/execute) and not connected to yet: Poseidon stores the
 * request under a fresh execution ID and runs it when a WebSocket connects with that ID, once. They
 * go with their runner; a runner holds at most MAX_PENDING (the oldest is forgotten first), so a
 * client that never connects cannot grow the server without bound.
 */
import { randomUUID } from 'node:crypto';
import type { ExecutionRequest } from './requests.js';

export const MAX_PENDING = 256;

export class PendingExecutions {
  private readonly byRunner = new Map<string, Map<string, ExecutionRequest>>();

  /** Stores the request; its execution ID (a random UUID: not guessable). */
  store(runnerId: string, request: ExecutionRequest): string {
    const id = randomUUID();
    let pending = this.byRunner.get(runnerId);
    if (pending === undefined) {
      pending = new Map();
      this.byRunner.set(runnerId, pending);
    }
    if (pending.size >= MAX_PENDING) pending.delete(pending.keys().next().value ?? '');
    pending.set(id, request);
    return id;
  }

  has(runnerId: string, executionId: string): boolean {
    return this.byRunner.get(runnerId)?.has(executionId) === true;
  }

  /** The request, removed: an execution runs once. */
  take(runnerId: string, executionId: string): ExecutionRequest | undefined {
    const pending = this.byRunner.get(runnerId);
    const request = pending?.get(executionId);
    pending?.delete(executionId);
    if (pending?.size === 0) this.byRunner.delete(runnerId);
    return request;
  }

  /** Forgets the executions of runners that `exists` no longer knows. */
  sweep(exists: (runnerId: string) => boolean): void {
    for (const runnerId of [...this.byRunner.keys()]) if (!exists(runnerId)) this.byRunner.delete(runnerId);
  }

  forget(runnerId: string): void {
    this.byRunner.delete(runnerId);
  }

  get size(): number {
    let count = 0;
    for (const pending of this.byRunner.values()) count += pending.size;
    return count;
  }
}
