import type { Readable, Writable } from 'node:stream';
import type { Command } from 'commander';
import { systemClock, type Clock } from '../clock/index.js';
import { ExecClient } from '../exec/execClient.js';
import { NomadClient } from '../nomad/client.js';
import { nomadConfigFromEnv } from '../nomad/config.js';
import type { Allocation, AllocationListStub } from '../nomad/types.js';
import { interruptSignal } from './commandIo.js';

/**
 * `warden exec [-t] <alloc-prefix> [--task T] -- cmd args…`, like `nomad alloc exec`: the allocation
 * found by id prefix, stdin piped (or the terminal in raw mode with -t, resizes forwarded), and the
 * remote exit code as its own; 1 when the command could not run.
 */

export interface ExecCommandOptions {
  task?: string;
  tty?: boolean;
  namespace?: string;
}

/** A terminal stdin can go raw; a terminal stdout has a size and says when it changes. */
export interface ExecIo {
  env: Readonly<Record<string, string | undefined>>;
  stdin: Readable & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  stdout: Writable & { columns?: number; rows?: number };
  stderr: Writable;
  clock?: Clock;
  signal?: AbortSignal;
}

const EXEC_FAILED = 1;

/** Thrown for an allocation prefix or task that does not pick exactly one. */
export class ExecTargetError extends Error {
  readonly code = 'WARDEN_EXEC_TARGET';
  constructor(message: string) {
    super(message);
    this.name = 'ExecTargetError';
  }
}

/** The Nomad CLI's rule: at least two characters, and an even number of hex digits in a UUID prefix. */
function sanitizePrefix(prefix: string): string {
  if (prefix.length < 2) throw new ExecTargetError('Alloc ID must contain at least two characters.');
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

/** As `nomad alloc exec`: without --task, the only task of the allocation's group in its job. */
function pickTask(allocation: Allocation, task: string | undefined): string {
  if (task !== undefined) return task;
  const group = allocation.Job?.TaskGroups?.find((candidate) => candidate.Name === allocation.TaskGroup);
  const tasks = (group?.Tasks ?? []).map((candidate) => candidate.Name);
  const [only, ...others] = tasks;
  if (only === undefined || others.length > 0) {
    throw new ExecTargetError(`Please specify the task with --task (allocation has: ${tasks.join(', ') || 'no tasks'})`);
  }
  return only;
}

export async function execInAllocation(prefix: string, command: readonly string[], options: ExecCommandOptions, io: ExecIo): Promise<number> {
  const config = nomadConfigFromEnv(io.env, options.namespace ? { namespace: options.namespace } : {});
  const clock = io.clock ?? systemClock;
  const nomad = new NomadClient(config, { clock });
  const tty = options.tty === true;
  const raw = tty && io.stdin.isTTY === true && io.stdin.setRawMode !== undefined;
  const onResize = (): void => session?.resize(io.stdout.rows ?? 24, io.stdout.columns ?? 80);
  let session: ReturnType<ExecClient['exec']> | undefined;
  try {
    if (command.length === 0) throw new ExecTargetError('a command is required: warden exec <alloc> -- cmd args…');
    const wanted = sanitizePrefix(prefix);
    const { body } = await nomad.listAllocations({ prefix: wanted });
    const allocation = (await nomad.getAllocation(pickAllocation(wanted, body).ID)).body;
    session = new ExecClient(config, { clock }).exec(allocation.ID, {
      task: pickTask(allocation, options.task),
      command,
      tty,
      stdin: io.stdin,
      ...(io.signal === undefined ? {} : { signal: io.signal }),
    });
    if (raw) io.stdin.setRawMode?.(true);
    if (tty && io.stdout.rows !== undefined) {
      onResize();
      io.stdout.on('resize', onResize);
    }
    const flushed = Promise.all([
      pipeInto(session.stdout, io.stdout),
      pipeInto(session.stderr, io.stderr),
    ]);
    const exitCode = await session.exitCode;
    await flushed;
    return exitCode;
  } catch (error) {
    if (!(error instanceof Error)) throw error;
    io.stderr.write(`Error: ${error.message}\n`);
    return EXEC_FAILED;
  } finally {
    if (raw) io.stdin.setRawMode?.(false);
    io.stdout.off('resize', onResize);
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

export function registerExecCommand(program: Command): void {
  program
    .command('exec')
    .description('Run a command in an allocation over the exec websocket, like `nomad alloc exec`')
    .argument('<alloc-prefix>', 'allocation id or a prefix of it')
    .argument('<command...>', 'the command and its arguments (after --)')
    .option('--task <task>', 'the task to run in (default: the allocation’s only task)')
    .option('-t, --tty', 'allocate a terminal: raw mode here, resizes forwarded')
    .option('-n, --namespace <namespace>', 'the allocation’s namespace (default NOMAD_NAMESPACE)')
    .action(async (prefix: string, command: string[], options: ExecCommandOptions) => {
      process.exitCode = await execInAllocation(prefix, command, options, {
        env: process.env,
        stdin: process.stdin,
        stdout: process.stdout,
        stderr: process.stderr,
        signal: interruptSignal(),
      });
      process.stdin.destroy();
    });
}
