/**
 * Ending agents and everything they started, however the run ended. Used by the agents' own
 * stop(), by the live tier's runner, and by its watchdog (a process of its own that does the same
 * once the runner is gone, even killed), so it works from pids and paths alone.
 *
 * What an agent leaves is found by its data dir: a raw_exec executor's command line names its log
 * under the data dir, and a task's working directory is inside it. Nothing else is touched.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';

export interface CleanUp {
  /** Agents (process group leaders): SIGINT first (a dev agent then destroys its allocations), SIGKILL to the group after graceMs. */
  readonly pids: readonly number[];
  readonly dataDirs: readonly string[];
  readonly graceMs: number;
}

/** Running (not gone, not a zombie waiting for its parent). */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The state follows the command's closing parenthesis (the command itself may hold one).
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

async function untilGone(pids: readonly number[], timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (pids.some(isRunning)) {
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return true;
}

/** Processes whose command line names one of the dirs, or whose working directory is inside one. */
export function processesUnder(dirs: readonly string[]): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      let cwd = '';
      try {
        cwd = readlinkSync(`/proc/${pid}/cwd`);
      } catch {
        // a kernel thread, or gone
      }
      if (dirs.some((dir) => cmdline.includes(dir) || cwd === dir || cwd.startsWith(`${dir}/`)) && isRunning(pid)) found.push(pid);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Mount points inside the dirs, deepest first (the exec driver's task dirs bind-mount the alloc dir and a tmpfs for secrets). */
function mountsUnder(dirs: readonly string[]): string[] {
  const points = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => (line.split(' ')[1] ?? '').replace(/\\040/g, ' '))
    .filter((point) => dirs.some((dir) => point.startsWith(`${dir}/`)));
  return points.sort((a, b) => b.length - a.length);
}

/** Ends the agents and what they left, unmounts and removes the data dirs; returns the pids it had to kill besides the agents. */
export async function cleanUpAfter({ pids, dataDirs, graceMs }: CleanUp): Promise<number[]> {
  for (const pid of pids) signal(pid, 'SIGINT');
  if (!(await untilGone(pids, graceMs))) for (const pid of pids) signal(-pid, 'SIGKILL');
  await untilGone(pids, 5_000);
  const left = processesUnder(dataDirs);
  for (const pid of left) signal(pid, 'SIGKILL');
  await untilGone(left, 5_000);
  for (const point of mountsUnder(dataDirs)) {
    try {
      execFileSync('umount', ['-l', point], { stdio: 'ignore' });
    } catch {
      // not ours to unmount, or already gone: rmSync below then fails loudly rather than deleting through it
    }
  }
  const stillMounted = mountsUnder(dataDirs);
  for (const dir of dataDirs) {
    if (stillMounted.some((point) => point.startsWith(`${dir}/`))) throw new Error(`not removing ${dir}: ${stillMounted.join(', ')} still mounted inside it`);
    rmSync(dir, { recursive: true, force: true });
  }
  return left;
}
