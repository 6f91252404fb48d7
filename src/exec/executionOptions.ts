import { shellJoin, shellQuote } from './shellQuote.js';

/**
 * How a code-execution service runs a command (Poseidon's ExecuteCommand): as root or as an
 * unprivileged user, without the NOMAD_* variables of the task's environment, with stderr kept apart
 * from stdout under a tty. Every piece of shell text is built with shellQuote.
 *
 * The preparation (the stderr fifo, the working directory, the environment) runs as the task's own
 * user, and only the command itself goes through the `setuser` wrapper: the unprivileged user then
 * starts in a working directory it may not be able to reach by its path (a Nomad client's data dir
 * is 0700), and the fifo stays the task user's, which no other unprivileged process can open.
 */
export interface ExecutionOptions {
  /** Run as the allocation's user (true, the default) or through the `setuser` wrapper. */
  privileged?: boolean;
  /** argv prefix that runs the rest as the unprivileged user. Default: Poseidon's `/sbin/setuser user`. */
  setuser?: readonly string[];
  /** Remove every NOMAD_* variable from the command's environment. Default true. */
  removeNomadEnvironment?: boolean;
  /**
   * Start the command from a clean environment holding only these of the task's variables (those
   * set): for drivers whose tasks inherit the Nomad agent's own environment (exec, raw_exec).
   */
  keptEnvironment?: readonly string[];
  /** Directory for the stderr fifo (with tty and separateStderr). Default /tmp. */
  fifoDirectory?: string;
  /**
   * Directory to run in. A leading `$NAME` is read from the task's environment before the NOMAD_*
   * variables are removed (`$NOMAD_TASK_DIR`: the task's own directory under exec and raw_exec).
   */
  workingDirectory?: string;
}

export const DEFAULT_SETUSER: readonly string[] = ['/sbin/setuser', 'user'];

// Names only: a value containing a newline can at worst name a variable that is then unset, harmlessly.
const UNSET_NOMAD = `unset $(env | sed -n 's/^\\(NOMAD_[A-Za-z0-9_]*\\)=.*/\\1/p')`;

function asUser(argv: readonly string[], options: ExecutionOptions): string[] {
  return options.privileged === false ? [...(options.setuser ?? DEFAULT_SETUSER), ...argv] : [...argv];
}

/** Runs `script` in /bin/sh as the task's user. */
function shell(script: string): string[] {
  return ['/bin/sh', '-c', script];
}

/** `cd` into the directory, a leading `$NAME` expanded by the shell and the rest quoted. */
function changeDirectory(directory: string): string {
  const variable = /^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))(.*)$/s.exec(directory);
  const target = variable ? `"$${variable[1] ?? variable[2] ?? ''}"${variable[3] ? shellQuote(variable[3]) : ''}` : shellQuote(directory);
  return `cd -- ${target} || exit 1`;
}

/** `env -i` with the named variables that are set, quoted by the shell itself: nothing else reaches the command. */
function cleanEnvironment(kept: readonly string[]): string {
  const names = kept.map((name) => {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new TypeError(`${JSON.stringify(name)} is not an environment variable name`);
    return `\${${name}+"${name}=$${name}"}`;
  });
  return ['env -i', ...names].join(' ');
}

/** The argv to ask Nomad for: `command` wrapped as the options say (unchanged when they ask nothing). */
export function wrapCommand(command: readonly string[], options: ExecutionOptions = {}, stderrFifo?: string): string[] {
  const steps: string[] = [];
  const clean = options.keptEnvironment === undefined ? undefined : cleanEnvironment(options.keptEnvironment);
  if (stderrFifo !== undefined) {
    const fifo = shellQuote(stderrFifo);
    // First, so that whatever fails after it is said on stderr and the reader always gets its writer:
    // wait for the reader's fifo, send stderr into it, and remove its name once both ends are open.
    steps.push(`until [ -p ${fifo} ]; do sleep 0.01; done`, `exec 2>${fifo}`, `rm -f ${fifo}`);
  }
  // Before the environment is cleaned: `$NOMAD_TASK_DIR` and the like are gone after.
  if (options.workingDirectory !== undefined) steps.push(changeDirectory(options.workingDirectory));
  if (options.removeNomadEnvironment !== false && clean === undefined) steps.push(UNSET_NOMAD);
  if (steps.length === 0 && clean === undefined) return asUser(command, options);
  const run = [...(clean === undefined ? [] : [clean]), shellJoin(asUser(command, options))].join(' ');
  return shell([...steps, `exec ${run}`].join('; '));
}

/**
 * The second exec that creates the fifo (the task user's, 0600) and copies what arrives in it: the
 * command's stderr. The command removes the fifo's name once it has opened it; `cat` is the exec's own
 * process (Nomad ends an exec whose client left by killing that process alone: a `cat` under a shell
 * would live on).
 */
export function stderrReaderCommand(stderrFifo: string): string[] {
  const fifo = shellQuote(stderrFifo);
  return shell(`mkfifo -m 600 ${fifo} && exec cat ${fifo}`);
}

/**
 * Removes a fifo the command never opened (it ended, or was ended, first): opened read-write first,
 * which lets a reader waiting for a writer go on to its end of file, then unlinked.
 */
export function removeFifoCommand(stderrFifo: string): string[] {
  const fifo = shellQuote(stderrFifo);
  return shell(`if [ -p ${fifo} ]; then exec 3<>${fifo}; rm -f ${fifo}; fi`);
}
