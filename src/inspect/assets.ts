/**
 * The page's script and style, built from src/inspect/browser/ by `npm run build:inspector` into
 * dist/inspector/ of the package (a clone or an installed tarball alike: found from this file,
 * whether it runs from src/ or dist/src/). Read once per server start.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { InspectorServerError } from './errors.js';

export interface PageAssets {
  readonly script: string;
  readonly style: string;
}

/** <package root>/dist/inspector: the nearest folder above this file with a package.json. */
export function defaultAssetsDir(): string {
  let dir = import.meta.dirname;
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return join(dir, 'dist', 'inspector');
}

export function loadPageAssets(dir = defaultAssetsDir()): PageAssets {
  try {
    return { script: readFileSync(join(dir, 'app.js'), 'utf8'), style: readFileSync(join(dir, 'app.css'), 'utf8') };
  } catch (error) {
    throw new InspectorServerError(`the inspector's page is not built (${error instanceof Error ? error.message : String(error)}): run \`npm run build:inspector\``);
  }
}
