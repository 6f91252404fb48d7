import { spawnSync } from 'node:child_process';

/** What a terminal stdin offers (a tty.ReadStream): raw mode, and its file descriptor. */
export interface TerminalInput {
  isTTY?: boolean;
  setRawMode?: (raw: boolean) => unknown;
  fd?: number;
}

/**
 * Puts a terminal in raw mode as `nomad alloc exec` does (moby/term MakeRaw, i.e. cfmakeraw), so the
 * remote terminal's bytes reach ours unchanged. Node's setRawMode leaves output processing on (libuv
 * keeps OPOST and sets ONLCR), which turns every `\r\n` of the remote terminal into `\r\r\n`; `stty raw
 * -echo` on the same terminal turns it off. Returns the restore (safe to call twice): setRawMode(false)
 * puts back the settings libuv saved first, output processing included, as Node does at exit.
 */
export function makeRaw(input: TerminalInput): () => void {
  input.setRawMode?.(true);
  if (typeof input.fd === 'number') {
    // stty works on its stdin: ours. Without stty the output keeps its doubled CRs, nothing worse.
    spawnSync('stty', ['raw', '-echo'], { stdio: [input.fd, 'ignore', 'ignore'] });
  }
  let restored = false;
  return () => {
    if (restored) return;
    restored = true;
    input.setRawMode?.(false);
  };
}
