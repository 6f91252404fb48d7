import { constants } from 'node:os';

/**
 * The exit codes of `warden` (README "Exit codes"). 1 keeps the meaning each command gives it (gate:
 * unhealthy; exec: the command could not run, as with `nomad alloc exec`), so nothing else shares it.
 * `exec` otherwise exits with the remote command's own code.
 */

/** Nomad could not be reached, or its event stream gave up (a refused token). */
export const EXIT_UNREACHABLE = 2;
/** The command line is wrong: an unknown option or command, a missing or malformed argument (sysexits EX_USAGE). */
export const EXIT_USAGE = 64;
/** Warden itself failed: an error it has no better code for (sysexits EX_SOFTWARE); the message says what. */
export const EXIT_INTERNAL = 70;
/** Used by exec for a remote exit code that no exit status can carry (outside 0–255): never success. */
export const EXIT_OUT_OF_RANGE = 255;

/** As a shell reports a command ended by a signal: 128 + its number (Ctrl-C 130, SIGTERM 143, SIGPIPE 141). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + constants.signals[signal];
}

/** A remote exit code as this process's exit status: itself within 0–255, else 255 (never 0 by truncation). */
export function exitStatusOf(code: number): number {
  return Number.isInteger(code) && code >= 0 && code <= 255 ? code : EXIT_OUT_OF_RANGE;
}
