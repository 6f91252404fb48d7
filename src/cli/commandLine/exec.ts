import type { Command } from 'commander';
import { argvWords } from '../argumentParsers.js';

/** `warden exec`'s arguments, options and help (run by execCommand.ts). */
export function execCommandLine(program: Command): Command {
  return program
    .command('exec')
    .description('Run a command in an allocation over the exec websocket, like `nomad alloc exec`; its exit code is ours')
    .argument('<alloc-prefix>', 'allocation id or a prefix of it (at least two characters)')
    .argument('<command...>', 'the command and its arguments (after --)')
    .option('--task <task>', 'the task to run in (default: the allocation’s only task)')
    .option('-t, --tty', 'allocate a terminal: ours in raw mode, its size sent (default: when stdin and stdout are terminals)')
    .option('--no-tty', 'no terminal, even when stdin and stdout are terminals')
    .option('--no-stdin', 'do not forward stdin (the command reads an immediate end of input)')
    .option('-n, --namespace <namespace>', 'the allocation’s namespace (default NOMAD_NAMESPACE)')
    .option('--unprivileged', 'run as the unprivileged user, through `/sbin/setuser user` (as a code-execution runner does)')
    .option('--setuser <command>', 'the wrapper that runs the rest as the unprivileged user (implies --unprivileged)', argvWords)
    .option('--separate-stderr', 'with a terminal, keep stderr apart on our stderr (a second exec reads it from a fifo)')
    .option('--remove-nomad-env', 'unset the task’s NOMAD_* variables for the command (needs /bin/sh in the task)');
}
