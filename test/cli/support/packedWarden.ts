/**
 * What a user installs: `npm pack` of this checkout, installed into a fresh project with `npm ci
 * --offline`, so the `warden` there is the compiled bin run by plain node, with no tsx, TypeScript or
 * node-pty in reach. Built once per state of the package's inputs and kept in the system's temp
 * folder, so every suite (and every run) on the same sources shares it.
 *
 * Offline: the fresh project's lock is cut from this repository's own package-lock.json (the
 * tarball's dependencies and theirs, at the versions the repository resolved), so `npm ci` finds
 * every package in the npm cache that the repository's own `npm ci` filled, and needs no network.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';

// This file's folder under Jest (CommonJS) and under tsx (ESM: a bench) alike.
export const REPOSITORY = join(typeof __dirname === 'string' ? __dirname : import.meta.dirname, '..', '..', '..');

export interface PackedWarden {
  /** The fresh project that installed the tarball. */
  project: string;
  /** node_modules/.bin/warden of that project. */
  bin: string;
  /** The installed package: <project>/node_modules/warden. */
  packageDir: string;
  tarball: string;
}

interface Manifest {
  version: string;
  license: string;
  files: string[];
  bin: Record<string, string>;
  engines: Record<string, string>;
  dependencies: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, unknown>;
}

interface LockEntry {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  dev?: boolean;
  devOptional?: boolean;
  peer?: boolean;
  [field: string]: unknown;
}

const PROJECT_NAME = 'warden-install-check';

function readManifest(): Manifest {
  return JSON.parse(readFileSync(join(REPOSITORY, 'package.json'), 'utf8')) as Manifest;
}

/** What `npm pack` reads: the manifest, the build's configuration and scripts, and every path "files" names (dist is built). */
function packageInputs(manifest: Manifest): string[] {
  const roots = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts', ...manifest.files.filter((entry) => entry !== 'dist')];
  const files: string[] = [];
  const walk = (path: string): void => {
    const full = join(REPOSITORY, path);
    if (!existsSync(full)) return;
    if (statSync(full).isDirectory()) for (const entry of readdirSync(full).sort()) walk(join(path, entry));
    else files.push(path);
  };
  for (const root of roots) walk(root);
  return files;
}

function run(command: string, args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${command} ${args.join(' ')} in ${cwd} exited ${code}:\n${err.slice(-4000)}`))));
  });
}

/** The repository lock's entries for `names` and everything they depend on, under the same keys (Node's lookup). */
function dependencyClosure(names: string[]): Record<string, LockEntry> {
  const lock = JSON.parse(readFileSync(join(REPOSITORY, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const locate = (name: string, from: string): string => {
    for (let at = from; ; at = at.slice(0, Math.max(0, at.lastIndexOf('/node_modules/')))) {
      const key = `${at === '' ? '' : `${at}/`}node_modules/${name}`;
      if (lock.packages[key] !== undefined) return key;
      if (at === '') throw new Error(`${name} (needed by ${from || 'warden'}) is not in package-lock.json`);
    }
  };
  const closure: Record<string, LockEntry> = {};
  const queue: [string, string][] = names.map((name) => [name, '']);
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    const key = locate(...next);
    if (closure[key] !== undefined) continue;
    // Dev-only in the repository, a dependency in the fresh project.
    const { dev: _dev, devOptional: _devOptional, peer: _peer, ...entry } = lock.packages[key]!;
    closure[key] = entry;
    for (const name of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) queue.push([name, key]);
  }
  return closure;
}

async function build(manifest: Manifest, inputs: string[], into: string): Promise<void> {
  // The sources as a clone has them, with the repository's node_modules for the build's tools.
  const source = join(into, 'package');
  for (const file of inputs) {
    mkdirSync(dirname(join(source, file)), { recursive: true });
    cpSync(join(REPOSITORY, file), join(source, file));
  }
  symlinkSync(join(REPOSITORY, 'node_modules'), join(source, 'node_modules'));
  // Its output mixes the build scripts' lines with npm's: the tarball is the one file it adds to `into`.
  await run('npm', ['pack', '--pack-destination', into], source);
  rmSync(source, { recursive: true, force: true });
  const tarball = join(into, readdirSync(into).find((name) => name.endsWith('.tgz')) ?? 'no tarball packed');

  const project = join(into, 'project');
  mkdirSync(project);
  const spec = `file:../${basename(tarball)}`;
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  const { version, license, dependencies, bin, engines, peerDependencies, peerDependenciesMeta } = manifest;
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: PROJECT_NAME, private: true, dependencies: { warden: spec } }, null, 2));
  const packages = {
    '': { name: PROJECT_NAME, dependencies: { warden: spec } },
    'node_modules/warden': { version, resolved: spec, integrity, license, dependencies, bin, engines, peerDependencies, peerDependenciesMeta },
    ...dependencyClosure(Object.keys(dependencies)),
  };
  writeFileSync(join(project, 'package-lock.json'), JSON.stringify({ name: PROJECT_NAME, lockfileVersion: 3, requires: true, packages }, null, 2));
  await run('npm', ['ci', '--offline', '--no-audit', '--no-fund'], project);
}

function described(dir: string): PackedWarden {
  const project = join(dir, 'project');
  const tarball = readdirSync(dir).find((name) => name.endsWith('.tgz'));
  return { project, bin: join(project, 'node_modules', '.bin', 'warden'), packageDir: join(project, 'node_modules', 'warden'), tarball: join(dir, tarball ?? '') };
}

let packed: Promise<PackedWarden> | undefined;

/** The packed and installed warden of this checkout's current sources (built on first use). */
export function packedWarden(): Promise<PackedWarden> {
  packed ??= (async () => {
    const manifest = readManifest();
    const inputs = packageInputs(manifest);
    const hash = createHash('sha256');
    for (const file of inputs) hash.update(file).update('\0').update(readFileSync(join(REPOSITORY, file))).update('\0');
    // One checkout's builds share a prefix, so an older one is removed when a new one is made.
    const checkout = `warden-packed-${createHash('sha256').update(REPOSITORY).digest('hex').slice(0, 8)}-`;
    const dir = join(tmpdir(), `${checkout}${hash.digest('hex').slice(0, 16)}`);
    if (existsSync(dir)) return described(dir);
    const staging = mkdtempSync(join(tmpdir(), 'warden-packing-'));
    try {
      await build(manifest, inputs, staging);
      for (const old of readdirSync(tmpdir()).filter((name) => name.startsWith(checkout))) rmSync(join(tmpdir(), old), { recursive: true, force: true });
      // Whole or not at all: another suite building the same state at once keeps its own.
      renameSync(staging, dir);
    } catch (error) {
      rmSync(staging, { recursive: true, force: true });
      if (!existsSync(dir)) throw error;
    }
    return described(dir);
  })();
  return packed;
}
