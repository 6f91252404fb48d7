import { Command, CommanderError, Option } from 'commander';
import { CLI_LOG_LEVELS, LOG_FORMATS } from './logging.js';
import { registerExecCommand } from './execCommand.js';
import { registerDemoCommand } from './demoCommand.js';
import { registerGateCommand } from './gateCommand.js';
import { registerWatchCommand } from './watchCommand.js';
import { registerRecordCommands } from './recordCommands.js';
import { EXIT_USAGE } from './exitCodes.js';
import { packageRootOf, packageVersion } from './packageRoot.js';

/**
 * The `warden` command. Each subcommand lives in its own module and registers itself here; exit
 * codes are the subcommands' own (see each one, and exitCodes.ts), and EXIT_USAGE for a command line
 * that does not parse.
 */
export function buildProgram(version = packageVersion(packageRootOf(process.argv[1] ?? '.'))): Command {
  const program = new Command('warden')
    .description('Supervise HashiCorp Nomad allocations: health verdicts, evaluations, exec sessions.')
    .version(version, '-V, --version', 'print the version')
    .showHelpAfterError()
    // Commander's own exits become errors, inherited by every subcommand registered below.
    .exitOverride()
    .addOption(new Option('--log-format <format>', 'log records on stderr as JSON lines or one readable line each (default: pretty on a terminal, else json)').choices(LOG_FORMATS))
    .addOption(new Option('--log-level <level>', 'least severe level logged').choices(CLI_LOG_LEVELS).default('info'));
  registerWatchCommand(program);
  registerGateCommand(program);
  registerDemoCommand(program);
  registerExecCommand(program);
  registerRecordCommands(program);
  return program;
}

/** Runs the command line; resolves with the exit code when commander decided it (help, version, usage). */
export async function main(argv: readonly string[] = process.argv, program = buildProgram()): Promise<number | undefined> {
  try {
    await program.parseAsync([...argv]);
    return undefined;
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    // Help and --version exit 0; anything else commander refuses is a usage error.
    return error.exitCode === 0 ? 0 : EXIT_USAGE;
  }
}
