import type { Readable, Writable } from 'node:stream';
import type { Clock } from '../clock/clock.js';
import { systemClock } from '../clock/systemClock.js';
import { ExecClient } from '../exec/execClient.js';
import { runCommand } from '../exec/runCommand.js';
import type { ExecSession } from '../exec/sessions.js';
import { NomadClient } from '../nomad/client.js';
import { nomadConfigFromEnv } from '../nomad/config.js';
import { NomadConnectionError, NomadTimeoutError } from '../nomad/errors.js';
import { ExecAbortedError, ExecConnectionLostError, ExecError } from '../nomad/exec/errors.js';
import type { Allocation, AllocationListStub } from '../nomad/types.js';
import { errorMessage } from '../errorMessage.js';
import { interruptedExitCode, interruptSignal, useColor } from './commandIo.js';
import { EXIT_UNREACHABLE, EXIT_USAGE, exitStatusOf, signalExitCode } from './exitCodes.js';
import { makeRaw, type TerminalInput } from './rawTerminal.js';

/**
 * `warden exec [-t] <alloc-prefix> [--task T] -- cmd args…`, as `nomad alloc exec`: the allocation
 * found by id prefix, stdin forwarded, with a terminal (-t; by default when stdin and stdout are both
 * terminals) the local one in raw mode and its size sent, and the remote exit code as its own.
 * The runner options of the library (runCommand) are there too, all off by default so the request is
 * Nomad's own. Exit codes: the remote command's (255 for one outside 0–255); 1 when the command could
 * not run (Nomad's CLI's code); 2 when Nomad could not be reached; 64 for a usage error; 130 (143)
 * when Ctrl-C (SIGTERM) ended it; 141 when our stdout was closed (as SIGPIPE would).
 */

export interface ExecCommandOptions {
  task?: string;
  /** Allocate a terminal; default: when stdin and stdout are both terminals. */
  tty?: boolean;
  /** Forward stdin (default true); false closes it at once. */
  stdin?: boolean;
  namespace?: string;
  /** Run through the setuser wrapper (runCommand's privileged: false). */
  unprivileged?: boolean;
  /** The wrapper's argv (implies unprivileged); default `/sbin/setuser user`. */
  setuser?: string[];
  /** With a terminal, keep stderr apart on our stderr (runCommand's separateStderr). */
  separateStderr?: boolean;
  /** Unset the task's NOMAD_* variables for the command (runCommand's removeNomadEnvironment). */
  removeNomadEnv?: boolean;
}

/** A terminal stdin can go raw; a terminal stdout has a size and says when it changes. */
export interface ExecIo {
  env: Readonly<Record<string, string | undefined>>;
  stdin: Readable & TerminalInput;
  stdout: Writable & { isTTY?: boolean; columns?: number; rows?: number };
  stderr: Writable;
  clock?: Clock;
  signal?: AbortSignal;
}

/** Nomad's CLI exits 1 when the command could not run. */
const EXEC_FAILED = 1;

/** Thrown for an allocation prefix or task that does not pick exactly one (exit 1, as Nomad's). */
export class ExecTargetError extends Error {
  readonly code = 'WARDEN_EXEC_TARGET';
  constructor(message: string) {
    super(message);
    this.name = 'ExecTargetError';
  }
}

/** A command line `nomad alloc exec` would refuse before doing anything (exit EXIT_USAGE). */
export class ExecUsageError extends Error {
  readonly code = 'WARDEN_EXEC_USAGE';
  constructor(message: string) {
    super(message);
    this.name = 'ExecUsageError';
  }
}

/** The Nomad CLI's rule: an even number of hex digits in a UUID prefix. */
function sanitizePrefix(prefix: string): string {
  const hex = prefix.replaceAll('-', '');
  return /^[0-9a-f]+$/i.test(hex) && hex.length % 2 === 1 ? prefix.slice(0, -1) : prefix;
}

function pickAllocation(prefix: string, stubs: readonly AllocationListStub[]): AllocationListStub {
  const exact = stubs.find((stub) => stub.ID === prefix);
  if (exact !== undefined) return exact;
  const [only, ...others] = stubs;
  if (only === undefined) throw new ExecTargetError(`No allocation(s) with prefix or id "${prefix}" found`);
  if (others.length > 0) {
    const listing = stubs.map((stub) => `  ${stub.ID}  ${stub.JobID}  ${stub.TaskGroup}  ${stub.ClientStatus}`).join('\n');
    throw new ExecTargetError(`Prefix "${prefix}" matched multiple allocations:\n${listing}`);
  }
  return only;
}

/** As `nomad alloc exec`: the task given, checked, or else the only task of the allocation's group. */
function pickTask(allocation: Allocation, task: string | undefined): string {
  const group = allocation.Job?.TaskGroups?.find((candidate) => candidate.Name === allocation.TaskGroup);
  if (group === undefined) throw new ExecTargetError(`Could not find allocation task group: ${allocation.TaskGroup}`);
  const tasks = (group.Tasks ?? []).map((candidate) => candidate.Name);
  if (task !== undefined) {
    if (tasks.includes(task)) return task;
    throw new ExecTargetError(`Could not find task named: ${task}, found:\n${tasks.map((name) => `* ${name}`).join('\n')}`);
  }
  const [only, ...others] = tasks;
  if (only !== undefined && others.length === 0) return only;
  const listing = tasks.map((name) => `  * ${name}\n`).join('');
  throw new ExecTargetError(`Allocation "${allocation.ID.slice(0, 8)}" is running the following tasks:\n${listing}\nPlease specify the task with --task.`);
}

function isUnreachable(error: unknown, opened: boolean): boolean {
  return error instanceof NomadConnectionError || error instanceof NomadTimeoutError || (error instanceof ExecConnectionLostError && !opened);
}

export async function execInAllocation(prefix: string, command: readonly string[], options: ExecCommandOptions, io: ExecIo): Promise<number> {
  // Nomad's CLI prints errors in red when its stdout is a terminal (mitchellh/cli ColoredUi).
  const red = useColor(io.stdout, io.env) && (io.env.NOMAD_CLI_NO_COLOR ?? '') === '';
  const fail = (message: string, exitCode = EXEC_FAILED): number => {
    io.stderr.write(red ? `\u001b[0;31m${message}\u001b[0m\n` : `${message}\n`);
    return exitCode;
  };
  const terminal = io.stdin.isTTY === true && io.stdout.isTTY === true;
  const tty = options.tty ?? (terminal && options.stdin !== false);
  if (prefix.length < 2) return fail('Alloc ID must contain at least two characters', EXIT_USAGE);
  if (command.length === 0) return fail('A command is required', EXIT_USAGE);
  if (tty && options.stdin === false) return fail('--tty needs stdin: drop --no-stdin or add --no-tty', EXIT_USAGE);

  const config = nomadConfigFromEnv(io.env, options.namespace ? { namespace: options.namespace } : {});
  const clock = io.clock ?? systemClock;
  const nomad = new NomadClient(config, { clock });
  let restoreTerminal = (): void => undefined;
  let session: ExecSession | undefined;
  let opened = false;
  // Our own stdout closed (`| head`): end the session, and exit as a process SIGPIPE killed.
  const stop = new AbortController();
  const onOutputError = (): void => stop.abort('SIGPIPE');
  const onResize = (): void => session?.resize(io.stdout.rows ?? 0, io.stdout.columns ?? 0);
  try {
    let allocation: Allocation;
    try {
      const { body } = await nomad.listAllocations({ prefix: sanitizePrefix(prefix) });
      const stub = pickAllocation(prefix, body);
      allocation = (await nomad.getAllocation(stub.ID, stub.Namespace === undefined ? {} : { namespace: stub.Namespace })).body;
    } catch (error) {
      if (error instanceof ExecTargetError) throw error;
      return fail(`Error querying allocation: ${errorMessage(error)}`, isUnreachable(error, false) ? EXIT_UNREACHABLE : EXEC_FAILED);
    }
    const task = pickTask(allocation, options.task);
    // As Nomad's CLI: a terminal is refused only now, after the lookups.
    if (tty && !terminal) return fail('failed to exec into task: not a terminal');
    // Raw before the session reads a byte of stdin, as Nomad's CLI does.
    if (tty) restoreTerminal = makeRaw(io.stdin);
    io.stdout.on('error', onOutputError);
    session = runCommand(new ExecClient(config, { clock }), allocation.ID, {
      task,
      clock,
      command,
      tty,
      ...(options.stdin === false ? {} : { stdin: io.stdin }),
      signal: io.signal === undefined ? stop.signal : AbortSignal.any([io.signal, stop.signal]),
      privileged: options.unprivileged !== true && options.setuser === undefined,
      ...(options.setuser === undefined ? {} : { setuser: options.setuser }),
      removeNomadEnvironment: options.removeNomadEnv === true,
      separateStderr: options.separateStderr === true,
    });
    session.actor.subscribe((snapshot) => {
      if (snapshot.matches({ running: { phase: 'open' } })) opened = true;
    });
    if (tty) {
      onResize();
      io.stdout.on('resize', onResize);
    }
    const flushed = Promise.all([pipeInto(session.stdout, io.stdout), pipeInto(session.stderr, io.stderr)]);
    const exitCode = await session.exitCode;
    await flushed;
    restoreTerminal();
    const status = exitStatusOf(exitCode);
    if (status !== exitCode) fail(`the command's exit code ${exitCode} does not fit an exit status (0-255): exiting ${status}`);
    return status;
  } catch (error) {
    // Messages after the terminal is itself again.
    restoreTerminal();
    if (error instanceof ExecAbortedError) return stop.signal.aborted ? signalExitCode('SIGPIPE') : interruptedExitCode(io.signal);
    if (error instanceof ExecTargetError) return fail(error.message);
    if (error instanceof ExecError) {
      // Nomad's CLI shows Nomad's own reason.
      return fail(`failed to exec into task: ${error.reason || error.message}`, isUnreachable(error, opened) ? EXIT_UNREACHABLE : EXEC_FAILED);
    }
    throw error;
  } finally {
    restoreTerminal();
    io.stdout.off('resize', onResize);
    io.stdout.off('error', onOutputError);
    io.stdin.pause();
    await nomad.close();
  }
}

/** Copies a session output to a terminal stream without ending it. */
function pipeInto(from: Readable, to: Writable): Promise<void> {
  return new Promise((resolve) => {
    from.on('end', resolve);
    from.pipe(to, { end: false });
  });
}

/** `warden exec` run from the command line (its options as commandLine/exec.ts parses them). */
export async function execAction(prefix: string, command: string[], options: ExecCommandOptions): Promise<void> {
  process.exitCode = await execInAllocation(prefix, command, options, {
    env: process.env,
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    signal: interruptSignal(),
  });
  process.stdin.destroy();
}
