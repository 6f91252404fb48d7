/** An argument no shell word can carry: execve cannot pass a NUL byte. */
export class ShellQuoteError extends Error {
  readonly code = 'WARDEN_SHELL_QUOTE';
  constructor(message: string) {
    super(message);
    this.name = 'ShellQuoteError';
  }
}

// Words made only of these need no quotes in any POSIX shell position ('=' and '~' do, as first word).
const PLAIN = /^[A-Za-z0-9_@%+,./:-]+$/;

/**
 * One POSIX shell word that the shell turns back into exactly `argument`: inside single quotes
 * nothing is special, and a single quote is written as '\'' (close, escaped quote, reopen).
 */
export function shellQuote(argument: string): string {
  if (argument.includes('\0')) throw new ShellQuoteError('an argument cannot contain a NUL byte');
  if (PLAIN.test(argument)) return argument;
  return `'${argument.replaceAll("'", `'\\''`)}'`;
}

/** A command line whose words are exactly `argv`. */
export function shellJoin(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}
