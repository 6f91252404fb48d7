/**
 * What a user installs is what we test: the tarball `npm pack` makes, installed offline into a fresh
 * project (test/cli/support/packedWarden.ts), run with plain node. No tsx, TypeScript or node-pty is
 * within reach of that project.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
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
  expect(readlinkSync(warden.bin)).toBe('../warden/dist/src/cli/bin.js');
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
