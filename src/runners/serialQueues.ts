/**
 * Work in order, one at a time per key: the writes to one environment's template, or to one runner's
 * job. Nomad checks a register's EnforceIndex before it applies the write, so two writes of one job
 * sent side by side can land in either order (a used mark after the purge re-creates the job): the
 * next write to a key is sent only once Nomad answered the one before.
 */
export class SerialQueues<K> {
  private readonly tails = new Map<K, Promise<unknown>>();

  /** Runs `work` after everything queued under `key` before it has settled (whatever its outcome). */
  run<T>(key: K, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(work);
    this.tails.set(key, next);
    void next
      .finally(() => {
        if (this.tails.get(key) === next) this.tails.delete(key);
      })
      .catch(() => undefined);
    return next;
  }

  /** Whether work is queued or running under `key`. */
  busy(key: K): boolean {
    return this.tails.has(key);
  }
}
