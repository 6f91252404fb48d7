import { Command, Option } from 'commander';
import { CLI_LOG_LEVELS, LOG_FORMATS } from './logging.js';
import { registerExecCommand } from './execCommand.js';
import { registerDemoCommand } from './demoCommand.js';
import { registerGateCommand } from './gateCommand.js';
import { registerWatchCommand } from './watchCommand.js';
import { registerRecordCommands } from './recordCommands.js';

/**
 * The `warden` command. Each subcommand lives in its own module and registers itself here; exit
 * codes are the subcommands' own (see each one).
 */
export function buildProgram(): Command {
  const program = new Command('warden')
    .description('Supervise HashiCorp Nomad allocations: health verdicts, evaluations, exec sessions.')
    .showHelpAfterError()
    .addOption(new Option('--log-format <format>', 'log records on stderr as JSON lines or one readable line each (default: pretty on a terminal, else json)').choices(LOG_FORMATS))
    .addOption(new Option('--log-level <level>', 'least severe level logged').choices(CLI_LOG_LEVELS).default('info'));
  registerWatchCommand(program);
  registerGateCommand(program);
  registerDemoCommand(program);
  registerExecCommand(program);
  registerRecordCommands(program);
  return program;
}

export async function main(argv: readonly string[] = process.argv): Promise<void> {
  await buildProgram().parseAsync([...argv]);
}
