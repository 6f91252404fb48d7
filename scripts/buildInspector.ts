/**
 * npm run build:inspector (run by build, so by prepack, and before start and the tests): the
 * inspector page's TypeScript (src/inspect/browser/main.ts, bundled) and style.css →
 * dist/inspector/app.js and app.css, which the inspector server serves (src/inspect/assets.ts).
 */
import { join, relative } from 'node:path';
import { build } from 'esbuild';

const root = join(import.meta.dirname, '..');
const source = join(root, 'src', 'inspect', 'browser');
const outdir = join(root, 'dist', 'inspector');
await build({
  entryPoints: [
    { in: join(source, 'main.ts'), out: 'app' },
    { in: join(source, 'style.css'), out: 'app' },
  ],
  outdir,
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: ['chrome109', 'firefox115', 'safari16'],
  tsconfig: join(source, 'tsconfig.json'),
  legalComments: 'none',
  charset: 'utf8',
  logLevel: 'warning',
});
if (!process.argv.includes('--quiet')) console.log(`built ${relative(root, outdir)}/app.js and app.css`);
