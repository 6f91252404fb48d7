/**
 * The direction of imports (DEVELOPERS.md, DESIGN.md): machines ← nomad ← health/intake ←
 * supervisor ← runners/api ← cli, never in a circle. Read from the sources themselves: every
 * `import … from` / `export … from` of a relative path in machines/ and src/.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..');

/**
 * Each part's layer: a part may import its own layer and the ones below. The modules at the root
 * of src/ (logger, errors' messages, secrets, randomness, bounded history) and the clock serve all.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['src/clock', 'src/logger.ts', 'src/errorMessage.ts', 'src/secrets.ts', 'src/random.ts', 'src/boundedHistory.ts'],
  ['machines'],
  ['src/nomad', 'src/consul', 'src/streams'],
  ['src/health', 'src/intake', 'src/nomadChecks', 'src/deployments', 'src/exec'],
  ['src/supervisor'],
  ['src/runners', 'src/api', 'src/inspect', 'src/metrics', 'src/visualize', 'src/testing'],
  ['src/cli', 'src/index.ts'],
];

function partOf(file: string): string {
  const path = relative(ROOT, file).split('\\').join('/');
  const [top, second] = path.split('/');
  if (top === 'machines') return 'machines';
  // A directory of src/, or a module at its root.
  return `src/${second as string}`;
}

function layerOf(part: string): number {
  const layer = LAYERS.findIndex((parts) => parts.includes(part));
  if (layer < 0) throw new Error(`${part} has no layer in test/layers.test.ts: give it one`);
  return layer;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

interface Import {
  readonly from: string;
  readonly to: string;
  /** `import type` / `export type`: erased, no code runs. */
  readonly typeOnly: boolean;
}

const IMPORT = /^\s*(?:import|export)\s+(type\s+)?[^'";]*?from\s+'(\.[^']+)'/gm;

function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((match) => ({
    from: partOf(file),
    to: partOf(resolve(dirname(file), (match[2] as string).replace(/\.js$/, '.ts'))),
    typeOnly: match[1] !== undefined,
  }));
}

const IMPORTS = [...sources(join(ROOT, 'machines')), ...sources(join(ROOT, 'src'))].flatMap(importsOf).filter((i) => i.from !== i.to);

test('the sources are read: the parts import one another', () => {
  expect(IMPORTS.length).toBeGreaterThan(100);
  expect(IMPORTS).toContainEqual({ from: 'src/intake', to: 'src/health', typeOnly: false });
});

test('every import runs down the layers (machines may name the types of src/, as DESIGN.md allows)', () => {
  const upward = IMPORTS.filter((i) => layerOf(i.to) > layerOf(i.from) && !(i.from === 'machines' && i.typeOnly));
  expect([...new Set(upward.map((i) => `${i.from} → ${i.to}`))]).toEqual([]);
});

test('no parts import one another in a circle', () => {
  const edges = new Map<string, Set<string>>();
  for (const i of IMPORTS) {
    if (i.typeOnly) continue;
    edges.set(i.from, (edges.get(i.from) ?? new Set()).add(i.to));
  }
  const circles: string[] = [];
  const visit = (part: string, path: readonly string[]): void => {
    for (const next of edges.get(part) ?? []) {
      if (next === path[0]) circles.push([...path, next].join(' → '));
      else if (!path.includes(next) && next > (path[0] as string)) visit(next, [...path, next]);
    }
  };
  for (const part of edges.keys()) visit(part, [part]);
  expect(circles).toEqual([]);
});
