/**
 * A runner as its user holds it: the claimed runner's executions, files, ports and end. Every
 * operation counts as activity (the inactivity timer starts again) and shows among the runner
 * actor's executions while it runs; operations need the runner claimed and not stopping.
 */
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { ActorRefFrom } from 'xstate';
import type { runnerMachine } from '../../machines/runner.js';
import type { MappedPort, RunnerContext, RunnerExecution, StopReason } from '../../machines/runnerTypes.js';
import type { Clock } from '../clock/index.js';
import type { ExecTarget } from '../exec/sessions.js';
import { RunnerFileError, RunnerFileNotFoundError, RunnerUnavailableError, UnprivilegedUnavailableError } from './errors.js';
import { startExecution, type ExecuteOptions, type Execution, type ExecutionOutcome, type ExecutionSettings, type RunningExecution } from './execution.js';
import { FileContentStream, listCommand, parseListing, readCommand, splitByReach, tarArchive, updateCommand, type FileHeader, type UpdateFilesRequest } from './files.js';

export type RunnerActor = ActorRefFrom<typeof runnerMachine>;

/** Where a runner is in its life, in words. */
export type RunnerState = 'provisioning' | 'idle' | 'used' | 'stopping' | 'destroyed';

/** What the pools give their runners' handles. */
export interface RunnerHost {
  readonly clock: Clock;
  readonly target: ExecTarget;
  actor(runnerId: string): RunnerActor | undefined;
  settings(environmentId: number): ExecutionSettings;
  /** Executions and file operations running in a runner: ended when it stops. */
  executions(runnerId: string): Map<string, RunningExecution>;
  changed(environmentId: number): void;
}

export interface RunnerInfo {
  id: string;
  environmentId: number;
  state: RunnerState;
  allocationId: string | null;
  mappedPorts: MappedPort[];
  /** Seconds; 0 = none. */
  inactivityTimeoutS: number;
  claimedAt: number | null;
  lastActivity: number | null;
  /** Running now: executions and file operations. */
  executions: RunnerExecution[];
  startupMs: number | null;
  stopReason: StopReason | null;
}

export interface FileContent {
  header: FileHeader;
  /** The file's bytes (header.size of them). */
  content: Readable;
}

export function runnerState(snapshot: ReturnType<RunnerActor['getSnapshot']> | undefined): RunnerState {
  if (snapshot === undefined || snapshot.status !== 'active') return 'destroyed';
  if (snapshot.matches('idle')) return 'idle';
  if (snapshot.matches('used')) return 'used';
  if (snapshot.matches('stopping') || snapshot.matches('destroyed')) return 'stopping';
  return 'provisioning';
}

export function runnerInfo(context: RunnerContext, state: RunnerState): RunnerInfo {
  return {
    id: context.runnerId,
    environmentId: context.environmentId,
    state,
    allocationId: context.allocation?.allocId ?? null,
    mappedPorts: context.allocation?.ports ?? [],
    inactivityTimeoutS: context.timeoutMs / 1000,
    claimedAt: context.claimedAt ?? null,
    lastActivity: context.lastActivity ?? null,
    executions: context.executions,
    startupMs: context.startupMs ?? null,
    stopReason: context.stopReason ?? null,
  };
}

interface Completed {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** A stream's whole text (an execution's output, for one). */
export async function streamText(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export class Runner {
  constructor(
    private readonly host: RunnerHost,
    readonly id: string,
    readonly environmentId: number,
  ) {}

  get state(): RunnerState {
    return runnerState(this.host.actor(this.id)?.getSnapshot());
  }

  /** `exposedPort` → `host:port`, from the allocation. */
  get mappedPorts(): MappedPort[] {
    return this.host.actor(this.id)?.getSnapshot().context.allocation?.ports ?? [];
  }

  info(): RunnerInfo | undefined {
    const actor = this.host.actor(this.id);
    return actor && runnerInfo(actor.getSnapshot().context, this.state);
  }

  /** Runs a command (see ExecuteOptions); the outcome says how it ended. */
  execute(options: ExecuteOptions): Execution {
    return this.start('execute', options);
  }

  /**
   * Deletes, then writes (a tar archive streamed into the runner), as the privileged user. Where the
   * runner sees the host's filesystem (raw_exec), only paths within its working directory are written
   * as root; the others as the unprivileged user, who may do there what the runner's own code may.
   */
  async updateFiles(request: UpdateFilesRequest): Promise<void> {
    const { hostFilesystem } = this.host.settings(this.environmentId);
    const parts = hostFilesystem ? splitByReach(request) : { within: request, beyond: undefined };
    const failures: Completed[] = [];
    for (const [part, privileged] of [[parts.within, true], [parts.beyond, false]] as const) {
      if (part === undefined) continue;
      const archive = tarArchive(part.copy ?? [], Math.floor(this.host.clock.now() / 1000));
      const done = await this.complete('files.write', { command: updateCommand(part), privileged, stdin: archive });
      if (done.exitCode !== 0) failures.push(done);
    }
    const [first] = failures;
    if (first === undefined) return;
    const stderr = failures.map((done) => done.stderr).join('');
    const stdout = failures.map((done) => done.stdout).join('');
    throw new RunnerFileError(`file copy failed: stderr output '${stderr}' and stdout output '${stdout}'`, first.exitCode, stderr);
  }

  /** Poseidon's listing: names, types, sizes, modes, owners, modification times (recursive by default). */
  async listFiles(options: { path?: string; recursive?: boolean; privileged?: boolean } = {}): Promise<FileHeader[]> {
    const path = options.path === undefined || options.path === '' ? './' : options.path;
    const done = await this.complete('files.list', { command: listCommand(path, options.recursive ?? true), privileged: options.privileged === true });
    const files = parseListing(done.stdout);
    if (done.exitCode !== 0 && files.length === 0) throw new RunnerFileNotFoundError(`file not found or insufficient permissions: ${path}`, done.exitCode, done.stderr);
    return files;
  }

  /** A file's bytes, streamed; resolves once its size is known. */
  async readFile(path: string, options: { privileged?: boolean } = {}): Promise<FileContent> {
    const execution = this.start('files.read', { command: readCommand(path), privileged: options.privileged === true });
    const content = new FileContentStream();
    // The content ends only once the command succeeded: a reader never takes a cut-short file for a whole one.
    execution.stdout.pipe(content, { end: false });
    const stdoutDone = new Promise<void>((resolve) => {
      execution.stdout.once('end', resolve);
      execution.stdout.once('close', resolve);
    });
    const stderr = streamText(execution.stderr);
    const failed = execution.outcome.then(async (outcome) => {
      // A command that could not run at all (a missing wrapper) is not a missing file: its cause is the answer.
      if (outcome.status === 'failed') throw outcome.error;
      const exitCode = outcome.status === 'exited' ? outcome.exitCode : -1;
      throw new RunnerFileNotFoundError(`file not found or insufficient permissions: ${path}`, exitCode, await stderr);
    });
    failed.catch(() => undefined);
    // No header line: the command's end says why.
    const header = await Promise.race([content.header.catch(() => failed), failed]);
    void Promise.all([execution.outcome, stdoutDone, stderr]).then(([outcome, , errors]) => {
      if (outcome.status === 'exited' && outcome.exitCode === 0) content.end();
      else content.destroy(new RunnerFileNotFoundError(`file not found or insufficient permissions: ${path}`, outcome.status === 'exited' ? outcome.exitCode : -1, errors));
    });
    return { header, content };
  }

  /** Destroys the runner: its executions end, its job is purged. Resolves once Nomad confirmed. */
  async destroy(reason = 'the client wants to stop the runner'): Promise<void> {
    const actor = this.host.actor(this.id);
    if (actor === undefined) return;
    const done = new Promise<void>((resolve) => {
      const subscription = actor.subscribe({ complete: () => resolve(), error: () => resolve() });
      if (actor.getSnapshot().status !== 'active') {
        subscription.unsubscribe();
        resolve();
      }
    });
    actor.send({ type: 'DESTROY', reason });
    return done;
  }

  private start(kind: string, options: ExecuteOptions): Execution {
    const actor = this.host.actor(this.id);
    const snapshot = actor?.getSnapshot();
    const allocId = snapshot?.context.allocation?.allocId;
    if (actor === undefined || snapshot === undefined || this.state !== 'used' || allocId === undefined) {
      throw new RunnerUnavailableError(this.id, this.state === 'destroyed' ? 'is gone' : `is ${this.state}, not claimed`);
    }
    const settings = this.host.settings(this.environmentId);
    if (options.privileged !== true && settings.unprivilegedProblem !== undefined) throw new UnprivilegedUnavailableError(this.environmentId, settings.unprivilegedProblem);
    const id = randomUUID();
    const running = this.host.executions(this.id);
    const execution = startExecution({
      target: this.host.target,
      clock: this.host.clock,
      allocId,
      id,
      settings,
      options,
      onEnd: () => {
        running.delete(id);
        actor.send({ type: 'EXECUTION.ENDED', executionId: id });
        this.host.changed(this.environmentId);
      },
      onStuck: () => void this.destroy('the execution did not stop after SIGQUIT'),
    });
    running.set(id, execution);
    actor.send({ type: 'EXECUTION.STARTED', executionId: id, kind, at: this.host.clock.now() });
    this.host.changed(this.environmentId);
    return execution;
  }

  private async complete(kind: string, options: ExecuteOptions): Promise<Completed> {
    const execution = this.start(kind, options);
    const [stdout, stderr, outcome] = await Promise.all([streamText(execution.stdout), streamText(execution.stderr), execution.outcome]);
    return { exitCode: exitCodeOf(outcome, this.id), stdout, stderr };
  }
}

function exitCodeOf(outcome: ExecutionOutcome, runnerId: string): number {
  if (outcome.status === 'exited') return outcome.exitCode;
  if (outcome.status === 'timeout') throw new RunnerUnavailableError(runnerId, `timed out (${outcome.reason})`);
  throw outcome.error;
}
