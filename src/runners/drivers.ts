/**
 * What each task driver gives a runner, and so how Warden runs executions and file operations in it.
 * Poseidon knows one driver (docker, with its own images); a host without Docker runs exec or
 * raw_exec, whose runners see the host in different measures (measured on Nomad 1.1.2, see the README):
 *
 * - docker: a container per runner. Privileged is the image's user (root in Poseidon's images);
 *   unprivileged goes through the image's `/sbin/setuser user`.
 * - exec: a chroot of the task directory (the host's /bin, /etc, /lib, /usr copied in), a PID
 *   namespace and cgroup limits, the host's network. Nomad runs exec tasks as `nobody` unless the
 *   task names a user, and refuses `root` unless the client allows it (client option
 *   `user.denylist`), so the runner task asks for root: privileged executions are root, unprivileged
 *   ones drop to nobody with setpriv (util-linux, in the chroot as on the host).
 * - raw_exec: nothing between a runner and the host: its files, processes, users and network (the
 *   Nomad API on loopback too), the Nomad agent's own user (root, as a client runs) and environment,
 *   and no memory limit (Nomad's raw_exec applies none). Unprivileged executions drop to nobody with
 *   setpriv, as on exec.
 *
 * The exec and raw_exec tasks inherit the Nomad agent's environment (less Nomad's env.denylist), so
 * their executions start from a clean one. On raw_exec the file routes would write anywhere on the
 * host as root: they act as root only within the runner's working directory, and as the unprivileged
 * user elsewhere (no more than the runner's own code may do there).
 */
import { DEFAULT_SETUSER } from '../exec/executionOptions.js';
import type { RunnerDriver } from './poseidonFormat.js';

/** Poseidon's images: a `user` account and the phusion `setuser` script. */
export const POSEIDON_SETUSER: readonly string[] = DEFAULT_SETUSER;

/** nobody (65534, the kernel's overflow ID) with no supplementary groups; util-linux's setpriv, on every Linux host. */
export const SETPRIV_NOBODY: readonly string[] = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];

/** Variables an execution on a host driver keeps of the task's environment (the rest is the agent's). */
export const HOST_KEPT_ENVIRONMENT: readonly string[] = ['PATH', 'HOME', 'TERM', 'LANG', 'LANGUAGE', 'LC_ALL', 'LC_CTYPE', 'TZ'];

export interface DriverProfile {
  readonly driver: RunnerDriver;
  /** The wrapper of unprivileged executions when none is configured. */
  readonly setuser: readonly string[];
  /** Where commands run and relative paths point; undefined: the image's own working directory. */
  readonly workingDirectory: string | undefined;
  /** The runner's task user in its job (undefined: the driver's default). */
  readonly taskUser: string | undefined;
  /** The variables an execution keeps; undefined: all but NOMAD_* (the image's environment). */
  readonly keptEnvironment: readonly string[] | undefined;
  /** The runner sees the host's filesystem: file operations are root only within the working directory. */
  readonly hostFilesystem: boolean;
  /** What separates a runner from the host and from other runners, in a sentence. */
  readonly isolation: string;
}

const PROFILES: Readonly<Record<RunnerDriver, DriverProfile>> = {
  docker: {
    driver: 'docker',
    setuser: POSEIDON_SETUSER,
    workingDirectory: undefined,
    taskUser: undefined,
    keptEnvironment: undefined,
    hostFilesystem: false,
    isolation: "a container per runner (its own filesystem and processes; no network without networkAccess); privileged: the image's user, unprivileged: `/sbin/setuser user` from the image (Poseidon's images have it)",
  },
  exec: {
    driver: 'exec',
    setuser: SETPRIV_NOBODY,
    workingDirectory: '$NOMAD_TASK_DIR',
    taskUser: 'root',
    keptEnvironment: HOST_KEPT_ENVIRONMENT,
    hostFilesystem: false,
    isolation: "a chroot of the task directory, its own PID namespace and cgroup limits, but the host's network (networkAccess=false does not cut it off); privileged: root (a Nomad client allows it only with client option \"user.denylist\" not naming root, and on a host where Nomad may grant root tasks every capability), unprivileged: nobody (setpriv)",
  },
  raw_exec: {
    driver: 'raw_exec',
    setuser: SETPRIV_NOBODY,
    workingDirectory: '$NOMAD_TASK_DIR',
    taskUser: undefined,
    keptEnvironment: HOST_KEPT_ENVIRONMENT,
    hostFilesystem: true,
    isolation: "none: runners share the host's filesystem, processes and network (the Nomad API on loopback included, whatever networkAccess says) with each other and with the Nomad agent, and Nomad enforces no memory limit; privileged: the agent's user (root), who reads every runner's files; unprivileged: nobody (setpriv), who reads what the host lets nobody read and writes where nobody may (/tmp); for trusted code and playgrounds only",
  },
};

export function driverProfile(driver: RunnerDriver): DriverProfile {
  return PROFILES[driver];
}

/** The drivers in the order serve prefers them on a cluster: Poseidon's, then the one an operator enabled on purpose, then exec. */
export const DRIVER_PREFERENCE: readonly RunnerDriver[] = ['docker', 'raw_exec', 'exec'];

/** What a node tells of its drivers (GET /v1/nodes). */
export interface NodeDrivers {
  readonly Status?: string;
  readonly SchedulingEligibility?: string;
  readonly Drivers?: Readonly<Record<string, { readonly Detected?: boolean; readonly Healthy?: boolean }>> | null;
}

/**
 * The driver runners get where none is configured: the first of DRIVER_PREFERENCE healthy on a ready,
 * eligible node (raw_exec is off unless an operator enabled it; exec is on everywhere but refuses root
 * tasks by default). Undefined when no node has any of them.
 */
export function preferredDriver(nodes: readonly NodeDrivers[]): RunnerDriver | undefined {
  const usable = nodes.filter((node) => node.Status === 'ready' && (node.SchedulingEligibility ?? 'eligible') === 'eligible');
  return DRIVER_PREFERENCE.find((driver) => usable.some((node) => node.Drivers?.[driver]?.Healthy === true));
}
