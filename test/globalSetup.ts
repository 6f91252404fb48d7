/** Before any test: the inspector page's assets built from the sources as they are now (the server serves dist/inspector). */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export default function globalSetup(): void {
  const script = join(import.meta.dirname, '..', 'scripts', 'buildInspector.ts');
  execFileSync(process.execPath, ['--import', 'tsx', script, '--quiet'], { stdio: ['ignore', 'inherit', 'inherit'] });
}
