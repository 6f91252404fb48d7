import { Command, CommanderError, Option } from 'commander';
import { CLI_LOG_LEVELS, LOG_FORMATS } from './logOptions.js';
import { EXIT_USAGE } from './exitCodes.js';
import { packageRootOf, packageVersion } from './packageRoot.js';

/**
 * The `warden` command. Each subcommand lives in its own module and registers itself; exit codes are
 * the subcommands' own (see each one, and exitCodes.ts), and EXIT_USAGE for a command line that does
 * not parse.
 */

type Register = (program: Command) => void;

const recordCommands = async (): Promise<Register> => (await import('./recordCommands.js')).registerRecordCommands;

/**
 * The subcommands by name, in the order help lists them. A module is loaded only when its command
 * runs (every one for the general help): `warden exec` starts without loading the supervisor.
 */
const COMMANDS: Readonly<Record<string, () => Promise<Register>>> = {
  watch: async () => (await import('./watchCommand.js')).registerWatchCommand,
  gate: async () => (await import('./gateCommand.js')).registerGateCommand,
  demo: async () => (await import('./demoCommand.js')).registerDemoCommand,
  exec: async () => (await import('./execCommand.js')).registerExecCommand,
  serve: async () => (await import('./serveCommand.js')).registerServeCommand,
  record: recordCommands,
  replay: recordCommands,
};

/** The program for `argv`: with the command it names registered, or all of them when it names none. */
export async function buildProgram(argv: readonly string[] = [], version = packageVersion(packageRootOf(process.argv[1] ?? '.'))): Promise<Command> {
  // The first argument naming a command is the command (the global options' values never do).
  const args = argv.slice(2);
  const at = args.findIndex((arg) => Object.hasOwn(COMMANDS, arg));
  const named = at < 0 ? undefined : args[at];
  const program = new Command('warden').description('Supervise HashiCorp Nomad allocations: health verdicts, evaluations, exec sessions.');
  // The program's --version comes before any command: after one it is the command's own
  // (`warden gate web --version 1`: the job version to gate), which commander would otherwise take
  // for the program's wherever it stands.
  if (named === undefined || args.slice(0, at).some((arg) => arg === '-V' || arg === '--version')) program.version(version, '-V, --version', 'print the version');
  program
    .showHelpAfterError()
    // Commander's own exits become errors, inherited by every subcommand registered below.
    .exitOverride()
    .addOption(new Option('--log-format <format>', 'log records on stderr as JSON lines or one readable line each (default: pretty on a terminal, else json)').choices(LOG_FORMATS))
    .addOption(new Option('--log-level <level>', 'least severe level logged').choices(CLI_LOG_LEVELS).default('info'));
  const loaders = named === undefined ? Object.values(COMMANDS) : [COMMANDS[named]!];
  const registers = new Set(await Promise.all(loaders.map((load) => load())));
  for (const register of registers) register(program);
  return program;
}

/** Runs the command line; resolves with the exit code when commander decided it (help, version, usage). */
export async function main(argv: readonly string[] = process.argv, program?: Command): Promise<number | undefined> {
  try {
    await (program ?? (await buildProgram(argv))).parseAsync([...argv]);
    return undefined;
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    // Help and --version exit 0; anything else commander refuses is a usage error.
    return error.exitCode === 0 ? 0 : EXIT_USAGE;
  }
}
