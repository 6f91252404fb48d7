/**
 * npm run build:cli (run by build, so by prepack): the `warden` command as an esbuild bundle in
 * dist/cli/, the package's bin. Node pays per module it loads (resolve, stat, read, compile): the
 * compiled sources are ~200 ESM files and their dependencies hundreds more (rxjs alone 224, undici
 * 111), so a command run from dist/src/ spent most of its start-up finding and reading files. The
 * bundle is split at the commands' dynamic imports (src/cli/main.ts): `warden --version` and the help
 * read one small file, each command the chunks it uses.
 *
 * The library (the package's exports) stays tsc's output in dist/src/, typed, with its dependencies
 * installed beside it; the bin carries its own copy of them. Debugging: the chunks have source maps
 * (mappings only: the sources are src/ of the package and the dependencies' own files), so
 * `NODE_OPTIONS=--enable-source-maps warden …` prints stack traces in the TypeScript's lines, and
 * `node dist/src/cli/bin.js` runs the unbundled command. The dependencies' licences go with their
 * code: dist/cli/THIRD-PARTY-NOTICES.txt.
 */
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { build } from 'esbuild';

const root = join(import.meta.dirname, '..');
const outdir = join(root, 'dist', 'cli');

/** Loaded from the user's installation when present, never bundled: node-pty (an optional peer) and ws's optional native helpers. */
const EXTERNAL = ['node-pty', 'bufferutil', 'utf-8-validate'];

rmSync(outdir, { recursive: true, force: true });
const result = await build({
  entryPoints: { warden: join(root, 'src', 'cli', 'bin.ts') },
  outdir,
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: EXTERNAL,
  // The CommonJS dependencies (undici, ws, commander, pino) require Node's built-in modules.
  banner: { js: "import { createRequire as __wardenCreateRequire } from 'node:module';\nconst require = __wardenCreateRequire(import.meta.url);" },
  sourcemap: 'linked',
  sourcesContent: false,
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
});

/** Every package the bundle took code from, with its licence text, as its licence asks. */
function notices(inputs: readonly string[]): string {
  const packages = new Map<string, string>();
  for (const input of inputs) {
    const match = /^(.*node_modules\/((?:@[^/]+\/)?[^/]+))\//.exec(input);
    if (match) packages.set(match[2]!, join(root, match[1]!));
  }
  const sections = [...packages].sort(([a], [b]) => a.localeCompare(b)).map(([name, dir]) => {
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string; license?: string };
    const licenseFile = readdirSync(dir).find((file) => /^(licen[cs]e|copying)(\.|$)/i.test(file));
    const text = licenseFile === undefined ? `(no licence file; package.json says ${manifest.license ?? 'nothing'})` : readFileSync(join(dir, licenseFile), 'utf8').trim();
    return `${name}@${manifest.version} (${manifest.license ?? 'unknown'})\n\n${text}`;
  });
  const rule = `\n\n${'-'.repeat(78)}\n\n`;
  return `The warden command (dist/cli/) bundles code of these packages, under their licences:${rule}${sections.join(rule)}\n`;
}

writeFileSync(join(outdir, 'THIRD-PARTY-NOTICES.txt'), notices(Object.keys(result.metafile.inputs)));
if (!process.argv.includes('--quiet')) console.log(`built ${relative(root, outdir)}/warden.js (${Object.keys(result.metafile.outputs).filter((file) => file.endsWith('.js')).length} files)`);
