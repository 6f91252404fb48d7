/**
 * Which part of a cluster one supervisor watches: namespaces and/or job id prefixes (Warden runs as
 * several instances, each supervising a namespace or a job prefix). Empty lists mean "all".
 */
export interface SupervisorScope {
  /** Namespaces to watch; default ["default"] as the Nomad CLI; ["*"] for every namespace. */
  readonly namespaces?: readonly string[];
  /** Job id prefixes to watch; default every job. */
  readonly jobPrefixes?: readonly string[];
}

export interface ResolvedScope {
  readonly namespaces: readonly string[];
  readonly jobPrefixes: readonly string[];
  includes(namespace: string | undefined, jobId: string | undefined): boolean;
}

export function resolveScope(scope: SupervisorScope = {}): ResolvedScope {
  const namespaces = scope.namespaces?.length ? [...scope.namespaces] : ['default'];
  const jobPrefixes = [...(scope.jobPrefixes ?? [])];
  const anyNamespace = namespaces.includes('*');
  return {
    namespaces,
    jobPrefixes,
    includes(namespace, jobId) {
      if (!anyNamespace && !namespaces.includes(namespace || 'default')) return false;
      if (jobPrefixes.length === 0) return true;
      return jobId !== undefined && jobPrefixes.some((prefix) => jobId.startsWith(prefix));
    },
  };
}
