/**
 * What a user installs is what we test: the tarball `npm pack` makes, installed offline into a fresh
 * project (test/cli/support/packedWarden.ts), run with plain node. No tsx, TypeScript or node-pty is
 * within reach of that project.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { closedPort } from './support/closedPort.js';
import { packedWarden, REPOSITORY, type PackedWarden } from './support/packedWarden.js';

let warden: PackedWarden;
beforeAll(async () => {
  warden = await packedWarden();
}, 300_000);

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function ran(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, env, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
      resolve({ code, stdout, stderr });
    });
  });
}

const manifest = JSON.parse(readFileSync(join(REPOSITORY, 'package.json'), 'utf8')) as { version: string };

test('the bin is the compiled JavaScript, run by node; nothing of the build is installed', async () => {
  expect(readlinkSync(warden.bin)).toBe('../warden/dist/cli/warden.js');
  expect(readFileSync(warden.bin, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
  for (const absent of ['tsx', 'typescript', 'node-pty', '@swc/core']) expect(existsSync(join(warden.project, 'node_modules', absent))).toBe(false);
  expect(readFileSync(join(warden.packageDir, 'LICENSE'), 'utf8')).toMatch(/^Mozilla Public License Version 2\.0\n/);
  // The README's jobspecs for running Warden on Nomad ship with it.
  for (const jobspec of ['warden-watch.nomad.hcl', 'warden-serve.nomad.hcl']) expect(readFileSync(join(warden.packageDir, 'deploy', jobspec), 'utf8')).toMatch(/^job "/m);
  const installed = JSON.parse(readFileSync(join(warden.packageDir, 'package.json'), 'utf8')) as { engines: { node: string }; dependencies: Record<string, string> };
  expect(installed.engines.node).toBe('>=20.18.1');
  expect(Object.keys(installed.dependencies)).not.toContain('node-pty');
});

test('--version, --help, and a usage error with its own exit code on stderr', async () => {
  await expect(ran(warden.bin, ['--version'], warden.project)).resolves.toEqual({ code: 0, stdout: `${manifest.version}\n`, stderr: '' });
  const help = await ran('npx', ['--offline', 'warden', '--help'], warden.project);
  expect(help.code).toBe(0);
  for (const command of ['watch', 'gate', 'exec', 'demo']) expect(help.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
  const usage = await ran(warden.bin, ['gate'], warden.project);
  expect(usage).toMatchObject({ code: 64, stdout: '' });
  expect(usage.stderr).toContain("error: missing required argument 'job'");
});

/** What one run of the installed bin compiles: every ESM file (a load hook) and CommonJS file (the loader), relative to the project. */
async function loaded(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Ran & { files: string[] }> {
  const scratch = mkdtempSync(join(tmpdir(), 'warden-loaded-'));
  try {
    const log = join(scratch, 'loaded.log');
    writeFileSync(log, '');
    writeFileSync(join(scratch, 'hook.mjs'), `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  if (url.startsWith('file:')) appendFileSync(${JSON.stringify(log)}, new URL(url).pathname + '\\n');
  return next(url, context);
}`);
    writeFileSync(join(scratch, 'register.mjs'), `import { Module, register } from 'node:module';
import { appendFileSync } from 'node:fs';
register('./hook.mjs', import.meta.url);
const compile = Module.prototype._compile;
Module.prototype._compile = function (content, filename) {
  appendFileSync(${JSON.stringify(log)}, filename + '\\n');
  return compile.call(this, content, filename);
};`);
    const result = await ran(warden.bin, args, warden.project, { ...process.env, ...env, NODE_OPTIONS: `--import ${join(scratch, 'register.mjs')}` });
    const files = [...new Set(readFileSync(log, 'utf8').split('\n').filter((file) => file.startsWith(warden.project)))].map((file) => relative(warden.project, file));
    return { ...result, files };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const COMMAND_MODULES = /(watch|gate|demo|exec|serve|record)Commands?-[A-Z0-9]+\.js$/;

test('start-up: --version and the help load no command, a command only its own; all of it from the bundle', async () => {
  for (const args of [['--version'], ['--help'], ['exec', '--help']]) {
    const { code, files } = await loaded(args);
    expect({ args, code }).toEqual({ args, code: 0 });
    expect(files[0]).toBe('node_modules/warden/dist/cli/warden.js');
    expect(files.filter((file) => !file.startsWith('node_modules/warden/dist/cli/'))).toEqual([]);
    expect(files.filter((file) => COMMAND_MODULES.test(file))).toEqual([]);
  }
  const exec = await loaded(['exec', 'ab', '--', 'true'], { NOMAD_ADDR: `http://127.0.0.1:${await closedPort()}` });
  expect(exec).toMatchObject({ code: 2, stdout: '' });
  expect(exec.stderr).toContain('Error querying allocation');
  expect(exec.files.filter((file) => COMMAND_MODULES.test(file)).map((file) => file.replace(/-[A-Z0-9]+\.js$/, ''))).toEqual(['node_modules/warden/dist/cli/chunks/execCommand']);
  expect(exec.files.filter((file) => !file.startsWith('node_modules/warden/dist/cli/'))).toEqual([]);
});

test("serve reads a Poseidon configuration file from the installed package (its YAML parser bundled)", async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'warden-config-'));
  try {
    writeFileSync(join(scratch, 'configuration.yaml'), 'server:\n  port: 7200\n  prot: 7201\n');
    const result = await ran(warden.bin, ['serve', '--config', join(scratch, 'configuration.yaml')], warden.project);
    expect(result).toEqual({ code: 64, stdout: '', stderr: `error: ${join(scratch, 'configuration.yaml')}:3: server.prot: not a key of Poseidon's configuration (did you mean port?)\n` });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});

test('the demo runs from the installed package: its recordings are in it', async () => {
  const demo = await ran(warden.bin, ['demo', '--no-inspect', '--speed', '50'], warden.project, { ...process.env, NO_COLOR: '1' });
  expect(demo.stderr).toBe('');
  expect(demo.code).toBe(0);
  for (const part of ['▶ 1/3  A task that fails at once', '▶ 2/3  A job that cannot be placed', '▶ 3/3  A rolling update', 'Done.']) expect(demo.stdout).toContain(part);
  // NO_COLOR: not one escape sequence.
  expect(demo.stdout).not.toContain('\u001b[');
}, 60_000);

test('the demo’s inspector serves its built page from the installed package; Ctrl-C ends it with exit 0', async () => {
  const child = spawn(warden.bin, ['demo', '--speed', '100', '--inspect-port', '0'], { cwd: warden.project, env: { ...process.env, NO_COLOR: '1' } });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const lingering = new Promise<void>((resolve) =>
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('Ctrl-C to end')) resolve();
    }),
  );
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  await lingering;
  const url = /Inspector \(live state charts and reasons\): (http:\/\/127\.0\.0\.1:\d+\/?)/.exec(stdout)?.[1] ?? '';
  const [page, script, snapshot] = await Promise.all(['', 'app.js', 'api/snapshot'].map((path) => fetch(new URL(path, url)).then((response) => response.text())));
  expect(page).toContain('<script src="/app.js"');
  expect(script?.length).toBeGreaterThan(1000);
  expect(JSON.parse(snapshot!)).toHaveProperty('schemaVersion');
  child.kill('SIGINT');
  expect(await exited).toBe(0);
  expect(stderr).toBe('');
}, 60_000);

test('the main entry and the testing kit load without node-pty; only a tty fake exec needs it, and says so', async () => {
  const script = `
    import { ExecClient, VirtualClock } from 'warden';
    import { FakeNomad } from 'warden/testing';
    const nomad = await FakeNomad.start({ clock: new VirtualClock() });
    nomad.cluster.registerJob({ ID: 'j', Name: 'j', Type: 'service', Datacenters: ['dc1'], TaskGroups: [{ Name: 'g', Count: 1, Tasks: [{ Name: 't', Driver: 'raw_exec', Config: {} }] }] });
    const [allocation] = nomad.cluster.placeAllocations('j');
    nomad.cluster.startTask(allocation.ID);
    const client = new ExecClient({ address: nomad.address });
    const piped = client.exec(allocation.ID, { task: 't', command: ['echo', 'hi'] });
    let out = '';
    piped.stdout.on('data', (chunk) => (out += chunk));
    const code = await piped.exitCode;
    const tty = await client.exec(allocation.ID, { task: 't', command: ['true'], tty: true }).exitCode.catch((error) => error);
    console.log(JSON.stringify({ code, out, ttyError: tty.name, ttyMessage: tty.message }));
    await nomad.close();
  `;
  const result = await ran(process.execPath, ['--input-type=module', '-e', script], warden.project);
  expect(result.stderr).toBe('');
  expect(JSON.parse(result.stdout)).toEqual({
    code: 0,
    out: 'hi\n',
    ttyError: 'ExecCommandStartError',
    ttyMessage: 'exec command could not start: failed to open a tty: tty sessions need node-pty, an optional peer dependency: npm install --save-dev node-pty',
  });
});
