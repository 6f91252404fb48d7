import { Command, CommanderError, Option } from 'commander';
import { demoCommandLine } from './commandLine/demo.js';
import { execCommandLine } from './commandLine/exec.js';
import { gateCommandLine } from './commandLine/gate.js';
import { recordCommandLine, replayCommandLine } from './commandLine/record.js';
import { serveCommandLine } from './commandLine/serve.js';
import { watchCommandLine } from './commandLine/watch.js';
import { CLI_LOG_LEVELS, LOG_FORMATS } from './logOptions.js';
import { EXIT_USAGE } from './exitCodes.js';
import { packageRootOf, packageVersion } from './packageRoot.js';

/**
 * The `warden` command. Each subcommand's arguments, options and help are in commandLine/ (small
 * modules that load nothing else), and what runs it in its own module, loaded only when that command
 * runs: `--version` and the help load no command, `warden exec` none of the supervisor. Exit codes
 * are the subcommands' own (see each one, and exitCodes.ts), and EXIT_USAGE for a command line that
 * does not parse.
 */

/** A command's action, as commander calls it: the arguments, the options, the command. */
type Action = (...args: never[]) => Promise<void>;

/** The subcommands in the order help lists them: the command line, and the module that runs it. */
const COMMANDS: readonly [define: (program: Command) => Command, load: () => Promise<Action>][] = [
  [watchCommandLine, async () => (await import('./watchCommand.js')).watchAction],
  [gateCommandLine, async () => (await import('./gateCommand.js')).gateAction],
  [demoCommandLine, async () => (await import('./demoCommand.js')).demoAction],
  [execCommandLine, async () => (await import('./execCommand.js')).execAction],
  [serveCommandLine, async () => (await import('./serveCommand.js')).serveAction],
  [recordCommandLine, async () => (await import('./recordCommands.js')).recordAction],
  [replayCommandLine, async () => (await import('./recordCommands.js')).replayAction],
];

/**
 * undici parses HTTP with llhttp compiled to WebAssembly. After ~1.8 MB of "bytes executed" (V8's
 * default budget, spent by the few answers `warden exec` reads) V8 recompiles its 34 kB parse loop
 * with TurboFan: seconds of a core on a busy machine and 40 MB, and the process waits for that to
 * finish before it can exit. A hundred times the budget keeps short commands on the baseline code; a
 * long-running one (serve, watch) still gets the optimised parser once it is really hot. Set before
 * a command runs, so before its first connection compiles the module.
 */
const WASM_TIERING_BUDGET = '--wasm-tiering-budget=180000000';

/**
 * The program with every command registered; a command's module loads when its action runs. Given
 * the command line (`argv`), the program's -V/--version is registered only where it can be the
 * program's: with no command named, or before the command. After one it is the command's own
 * (`warden gate web --version 1`: the job version to gate), which commander would otherwise take
 * for the program's wherever it stands (it printed the version and exited 0, read by CI as healthy).
 */
export function buildProgram(version = packageVersion(packageRootOf(process.argv[1] ?? '.')), argv?: readonly string[]): Command {
  const program = new Command('warden')
    .description('Supervise HashiCorp Nomad allocations: health verdicts, evaluations, exec sessions.')
    .showHelpAfterError()
    // Commander's own exits become errors, inherited by every subcommand registered below.
    .exitOverride()
    .addOption(new Option('--log-format <format>', 'log records on stderr as JSON lines or one readable line each (default: pretty on a terminal, else json)').choices(LOG_FORMATS))
    .addOption(new Option('--log-level <level>', 'least severe level logged').choices(CLI_LOG_LEVELS).default('info'));
  for (const [define, load] of COMMANDS) {
    define(program).action(async (...args: unknown[]) => {
      const [action, v8] = await Promise.all([load() as Promise<(...args: unknown[]) => Promise<void>>, import('node:v8')]);
      v8.setFlagsFromString(WASM_TIERING_BUDGET);
      await action(...args);
    });
  }
  if (argv === undefined || programVersionAsked(argv, new Set(program.commands.map((command) => command.name())))) program.version(version, '-V, --version', 'print the version');
  return program;
}

/** Whether `argv` names no command, or asks for the version before the command it names (the global options' values never name one). */
function programVersionAsked(argv: readonly string[], commands: ReadonlySet<string>): boolean {
  const args = argv.slice(2);
  const at = args.findIndex((arg) => commands.has(arg));
  return at < 0 || args.slice(0, at).some((arg) => arg === '-V' || arg === '--version');
}

/** Runs the command line; resolves with the exit code when commander decided it (help, version, usage). */
export async function main(argv: readonly string[] = process.argv, program = buildProgram(undefined, argv)): Promise<number | undefined> {
  try {
    await program.parseAsync([...argv]);
    return undefined;
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    // Help and --version exit 0; anything else commander refuses is a usage error.
    return error.exitCode === 0 ? 0 : EXIT_USAGE;
  }
}
