import { join } from 'node:path';
import type { Command } from 'commander';
import { portNumber, positiveNumber } from '../argumentParsers.js';
import { packageRootOf } from '../packageRoot.js';

/** The recordings shipped with the package, found from the `warden` script's own location. */
export function defaultRecordingsDir(script = process.argv[1] ?? '.'): string {
  // The package ships them (package.json "files") beside dist/, at the same place as in a clone.
  return join(packageRootOf(script), 'test', 'fixtures', 'nomad-1.1.2', 'scenarios');
}

/** `warden demo`'s options and help (run by demoCommand.ts). */
export function demoCommandLine(program: Command): Command {
  return program
    .command('demo')
    .description('Replay recorded Nomad deployments on a local FakeNomad and watch the supervisor judge them (npm start)')
    .option('--speed <factor>', 'run this many times faster than recorded', positiveNumber, 1)
    .option('--recordings <dir>', 'folder of recorded scenarios', defaultRecordingsDir())
    .option('--inspect-port <port>', 'port of the inspector web page (0: any free port; the URL is printed on start)', portNumber, 0)
    .option('--no-inspect', 'do not start the inspector');
}
