import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The folder of the package a script belongs to: the nearest one above it holding a package.json
 * (src/cli/bin.ts run from a clone, dist/cli/warden.js once installed; npm's bin symlink resolved).
 */
export function packageRootOf(script: string): string {
  let dir = dirname(existsSync(script) ? realpathSync(script) : script);
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) return dirname(script);
    dir = parent;
  }
  return dir;
}

/** The `version` of the package.json in `root`. */
export function packageVersion(root: string): string {
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version?: unknown };
  return typeof version === 'string' ? version : 'unknown';
}
