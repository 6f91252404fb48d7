/**
 * Which part of a cluster one supervisor watches: namespaces and/or job id prefixes (Warden runs as
 * several instances, each supervising a namespace or a job prefix) or exact job ids, and a shard of
 * the jobs (n instances splitting one cluster). Empty lists mean "all".
 */
export interface SupervisorScope {
  /** Namespaces to watch; default the client's (NOMAD_NAMESPACE), else ["default"], as the Nomad CLI; ["*"] for every namespace. */
  readonly namespaces?: readonly string[];
  /** Job id prefixes to watch; default every job. */
  readonly jobPrefixes?: readonly string[];
  /**
   * Exact job ids to watch; default every job. Nomad then sends only their events (the stream's
   * topics are keyed by job): a deploy gate on one job of a busy cluster reads its own job's.
   */
  readonly jobs?: readonly string[];
  /** Only the jobs that fall on this shard of `count` (see shardOf); default every job. */
  readonly shard?: JobShard;
}

/** Shard `index` (0-based) of `count`: `--shard index/count`. */
export interface JobShard {
  readonly index: number;
  readonly count: number;
}

export interface ResolvedScope {
  readonly namespaces: readonly string[];
  readonly jobPrefixes: readonly string[];
  /** Exact job ids (empty: any). */
  readonly jobs: readonly string[];
  readonly shard: JobShard | undefined;
  includes(namespace: string | undefined, jobId: string | undefined): boolean;
}

/** Raised for a shard that is not an index below a positive count. */
export class ShardError extends RangeError {
  readonly code = 'WARDEN_SHARD';

  constructor(message: string) {
    super(message);
    this.name = 'ShardError';
  }
}

/** 32-bit FNV-1a over the UTF-16 code units of `text`. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/** MurmurHash3's finaliser: every input bit moves every output bit. */
function mix(value: number): number {
  let hash = value;
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b);
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35);
  return (hash ^ (hash >>> 16)) >>> 0;
}

/**
 * The shard (0 … count-1) that judges a job: rendezvous hashing of (namespace, job id), so every job
 * falls on exactly one shard, the same in every process and every version of Warden, and going from
 * n to n+1 shards moves only the jobs the new shard takes (about 1/(n+1) of them) while a rolling
 * update of the shards runs old and new side by side.
 */
export function shardOf(namespace: string | undefined, jobId: string, count: number): number {
  const key = fnv1a(`${namespace || 'default'}\u0000${jobId}`);
  let best = 0;
  let bestScore = -1;
  for (let shard = 0; shard < count; shard++) {
    const score = mix(key ^ Math.imul(shard + 1, 0x9e3779b9));
    if (score > bestScore) {
      best = shard;
      bestScore = score;
    }
  }
  return best;
}

function checkShard(shard: JobShard): JobShard {
  const { index, count } = shard;
  if (!Number.isSafeInteger(count) || count < 1) throw new ShardError(`a shard count must be a positive integer, got ${count}`);
  if (!Number.isSafeInteger(index) || index < 0 || index >= count) throw new ShardError(`shard index must be an integer from 0 to ${count - 1}, got ${index}`);
  return { index, count };
}

export function resolveScope(scope: SupervisorScope = {}): ResolvedScope {
  const namespaces = scope.namespaces?.length ? [...scope.namespaces] : ['default'];
  const jobPrefixes = [...(scope.jobPrefixes ?? [])];
  const jobs = [...(scope.jobs ?? [])];
  const shard = scope.shard === undefined ? undefined : checkShard(scope.shard);
  const anyNamespace = namespaces.includes('*');
  return {
    namespaces,
    jobPrefixes,
    jobs,
    shard,
    includes(namespace, jobId) {
      if (!anyNamespace && !namespaces.includes(namespace || 'default')) return false;
      if (jobs.length > 0 && (jobId === undefined || !jobs.includes(jobId))) return false;
      if (jobPrefixes.length > 0 && (jobId === undefined || !jobPrefixes.some((prefix) => jobId.startsWith(prefix)))) return false;
      return shard === undefined || shard.count === 1 || (jobId !== undefined && shardOf(namespace, jobId, shard.count) === shard.index);
    },
  };
}
