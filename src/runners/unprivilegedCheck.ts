/**
 * Whether unprivileged executions can run in an environment's runners: checked once its first
 * runner is up (for each template it gets), by running `<shell> -c 'id -u'` in that runner as an
 * execution runs, as the privileged user and through the setuser wrapper. The wrapper must exist there, run, and end up as another
 * user: Poseidon's `/sbin/setuser` exists only in its own images, and a wrapper that cannot drop
 * privileges (a task already running as nobody) fails every unprivileged execution. A failed check
 * is said plainly (a pool problem, /health, the error of every unprivileged operation); runners that
 * start later are checked again, so a fixed host is noticed.
 */
import { runCommand } from '../exec/runCommand.js';
import type { ExecTarget } from '../exec/sessions.js';
import { errorMessage } from '../errorMessage.js';
import { RUNNER_TASK_NAME, type ExecutionSettings } from './execution.js';
import { streamText } from './runner.js';

export type UnprivilegedCheck =
  | { status: 'unchecked' }
  | { status: 'ok'; runnerId: string; privilegedUid: number; unprivilegedUid: number }
  | { status: 'failed'; runnerId: string; reason: string };

export interface CheckedRunner {
  runnerId: string;
  allocId: string;
}

export interface UnprivilegedChecksOptions {
  target: ExecTarget;
  settings(environmentId: number): ExecutionSettings;
  /** Whether the runner still runs (a check that failed because its runner went away teaches nothing). */
  alive(runnerId: string): boolean;
  /** A check ended (ok or failed). */
  checked(environmentId: number, check: UnprivilegedCheck): void;
  /** Bounds each of the check's two commands (default 30 s). */
  timeoutMs?: number;
}

interface Entry {
  templateKey: string;
  /** The last check's result (a failure stays while a later runner is checked again). */
  check: UnprivilegedCheck;
  checking: boolean;
  /** Runners already checked for this template (a failed check moves on to runners started later). */
  tried: Set<string>;
}

const UNCHECKED: UnprivilegedCheck = { status: 'unchecked' };

/** A failed check as the pools' problem and /health say it. */
export function unprivilegedProblemText(environmentId: number, reason: string): string {
  return `environment ${environmentId}: unprivileged executions cannot run: ${reason}`;
}

export class UnprivilegedChecks {
  private readonly entries = new Map<number, Entry>();
  private stopped = false;

  constructor(private readonly options: UnprivilegedChecksOptions) {}

  state(environmentId: number): UnprivilegedCheck {
    return this.entries.get(environmentId)?.check ?? UNCHECKED;
  }

  /** Why unprivileged executions cannot run in the environment, if its last check said so. */
  problem(environmentId: number): string | undefined {
    const check = this.state(environmentId);
    return check.status === 'failed' ? check.reason : undefined;
  }

  /**
   * The environment's idle runners now: checks one when its template has not been checked yet, or
   * its last check failed and a runner not tried yet is idle.
   */
  consider(environmentId: number, templateKey: string, idle: readonly CheckedRunner[]): void {
    if (this.stopped) return;
    let entry = this.entries.get(environmentId);
    if (entry === undefined || entry.templateKey !== templateKey) {
      entry = { templateKey, check: UNCHECKED, checking: false, tried: new Set() };
      this.entries.set(environmentId, entry);
    }
    const current = entry;
    if (current.checking || current.check.status === 'ok') return;
    const runner = idle.find((candidate) => !current.tried.has(candidate.runnerId));
    if (runner === undefined) return;
    current.tried.add(runner.runnerId);
    current.checking = true;
    void this.run(environmentId, runner).then((result) => {
      current.checking = false;
      // The runner went away under the check (nothing learnt: the next idle runner is tried), or the environment changed.
      if (this.stopped || this.entries.get(environmentId) !== current || result === undefined) return;
      const previous = current.check;
      current.check = result;
      // Said when it changes: a failure once, not again for every runner that fails the same way.
      if (!(previous.status === 'failed' && result.status === 'failed' && previous.reason === result.reason)) this.options.checked(environmentId, result);
    });
  }

  forget(environmentId: number): void {
    this.entries.delete(environmentId);
  }

  stop(): void {
    this.stopped = true;
    this.entries.clear();
  }

  private async run(environmentId: number, runner: CheckedRunner): Promise<UnprivilegedCheck | undefined> {
    const settings = this.options.settings(environmentId);
    const [privileged, unprivileged] = await Promise.all([this.userId(runner.allocId, true, settings), this.userId(runner.allocId, false, settings)]);
    const wrapper = settings.setuser.join(' ');
    if (this.stopped || !this.options.alive(runner.runnerId)) return undefined;
    const failed = (reason: string): UnprivilegedCheck => ({ status: 'failed', runnerId: runner.runnerId, reason });
    if ('error' in privileged) return failed(`\`${settings.shell} -c 'id -u'\` does not run in the runners: ${privileged.error}`);
    if ('error' in unprivileged) return failed(`the unprivileged wrapper \`${wrapper}\` does not work in the runners: ${unprivileged.error}`);
    if (unprivileged.uid === privileged.uid) {
      return failed(`the unprivileged wrapper \`${wrapper}\` runs commands as uid ${unprivileged.uid}, the same user as privileged executions`);
    }
    return { status: 'ok', runnerId: runner.runnerId, privilegedUid: privileged.uid, unprivilegedUid: unprivileged.uid };
  }

  /** `id -u` as the user, or what went wrong. */
  private async userId(allocId: string, privileged: boolean, settings: ExecutionSettings): Promise<{ uid: number } | { error: string }> {
    let session;
    try {
      session = runCommand(this.options.target, allocId, {
        task: RUNNER_TASK_NAME,
        // As an execution runs: the runner's shell, in its working directory, with its environment.
        command: [settings.shell, '-c', 'id -u'],
        privileged,
        setuser: settings.setuser,
        ...(settings.workingDirectory === undefined ? {} : { workingDirectory: settings.workingDirectory }),
        ...(settings.keptEnvironment === undefined ? {} : { keptEnvironment: settings.keptEnvironment }),
        timeoutMs: this.options.timeoutMs ?? 30_000,
      });
    } catch (error) {
      return { error: errorMessage(error) };
    }
    const [stdout, stderr, exit] = await Promise.all([
      streamText(session.stdout),
      streamText(session.stderr),
      session.exitCode.then((code) => ({ code }), (error: unknown) => ({ error: errorMessage(error) })),
    ]);
    if ('error' in exit) return { error: exit.error };
    const uid = /^\s*(\d+)\s*$/.exec(stdout)?.[1];
    if (exit.code !== 0 || uid === undefined) {
      const output = (stderr.trim() || stdout.trim()).slice(0, 500);
      return { error: `exit code ${exit.code}${output === '' ? '' : `: ${output}`}` };
    }
    return { uid: Number(uid) };
  }
}
