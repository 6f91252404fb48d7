/**
 * What each driver gives a runner, as Warden runs executions and file operations in it (see
 * src/runners/drivers.ts), over a FakeNomad acting as a cluster whose runners are local processes:
 * the exec task asks for root; exec and raw_exec executions start from a clean environment (their
 * tasks inherit the Nomad agent's); docker keeps the image's; on raw_exec the file routes write as
 * root only within the runner's working directory, as the unprivileged user beyond it.
 */
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunnerFileError } from '../../src/runners/errors.js';
import { checkEnvironmentSpec, templateJob, type RunnerDriver } from '../../src/runners/poseidonFormat.js';
import type { Runner } from '../../src/runners/runner.js';
import { asRoot } from '../testing/helpers.js';
import { collect, startPoolHarness, type PoolHarness } from './support/poolHarness.js';

const AGENT_ENV = { AWS_PROFILE: 'the-agents-profile', AGENT_SECRET: 's3cret' };

test('the exec task runs as root (Nomad runs it as nobody otherwise); docker and raw_exec name no user', () => {
  const user = (driver: RunnerDriver): string | undefined => templateJob(checkEnvironmentSpec({ id: 1, prewarmingPoolSize: 1, driver, image: 'img' })).TaskGroups?.[0]?.Tasks[0]?.User;
  expect([user('exec'), user('raw_exec'), user('docker')]).toEqual(['root', undefined, undefined]);
});

describe('runners by driver', () => {
  let h: PoolHarness;
  const ids: Record<RunnerDriver, number> = { raw_exec: 31, exec: 32, docker: 33 };
  beforeAll(async () => {
    h = await startPoolHarness({ taskEnv: AGENT_ENV });
    for (const [driver, id] of Object.entries(ids)) await h.settled(h.pools.putEnvironment({ id, prewarmingPoolSize: 1, driver: driver as RunnerDriver, image: 'img' }));
    await h.driveUntil(() => Object.values(ids).every((id) => h.pools.environment(id)?.idleRunners === 1));
  });
  afterAll(() => h.close());

  async function output(runner: Runner, command: string, options: { env?: Record<string, string>; privileged?: boolean } = {}): Promise<string> {
    const execution = runner.execute({ command, ...options });
    const [stdout] = await Promise.all([collect(execution.stdout), execution.outcome]);
    return stdout;
  }
  const names = (env: string): string[] => env.split('\n').filter(Boolean).map((line) => line.split('=')[0] ?? '').sort();

  it.each(['raw_exec', 'exec'] as const)("%s: an execution starts from a clean environment: none of the agent's variables, the request's and PATH kept", async (driver) => {
    const runner = h.pools.claim(ids[driver]);
    const env = names(await output(runner, 'env', { env: { MINE: '1' }, privileged: true }));
    expect(env).toEqual(expect.arrayContaining(['MINE', 'PATH', 'HOME']));
    expect(env.filter((name) => name in AGENT_ENV || name.startsWith('NOMAD_'))).toEqual([]);
    await h.settled(runner.destroy());
  });

  it("docker: the image's environment stays, less NOMAD_*", async () => {
    const runner = h.pools.claim(ids.docker);
    const env = names(await output(runner, 'env', { privileged: true }));
    expect(env).toEqual(expect.arrayContaining(['AWS_PROFILE', 'AGENT_SECRET', 'PATH']));
    expect(env.filter((name) => name.startsWith('NOMAD_'))).toEqual([]);
    await h.settled(runner.destroy());
  });

  describe('raw_exec file routes', () => {
    let runner: Runner;
    let outside: string;
    let workdir: string;
    beforeAll(async () => {
      await h.driveUntil(() => h.pools.environment(ids.raw_exec)?.idleRunners === 1);
      runner = h.pools.claim(ids.raw_exec);
      workdir = (await output(runner, 'pwd', { privileged: true })).trim();
      outside = mkdtempSync(join(tmpdir(), 'warden-beyond-'));
      chmodSync(outside, 0o777);
    });
    afterAll(async () => {
      rmSync(outside, { recursive: true, force: true });
      await h.settled(runner.destroy());
    });
    const owner = (path: string): number => statSync(path).uid;

    asRoot('within the working directory as root (protected, as Poseidon writes them); beyond it as the unprivileged user', async () => {
      await runner.updateFiles({ copy: [{ path: 'in/file.txt', content: 'in' }, { path: `${outside}/out.txt`, content: 'out' }, { path: '../up.txt', content: 'up' }] });
      expect(owner(join(workdir, 'in', 'file.txt'))).toBe(0);
      expect(owner(join(outside, 'out.txt'))).toBe(65534);
      expect(owner(join(workdir, '..', 'up.txt'))).toBe(65534);
      expect(await output(runner, `cat in/file.txt ${outside}/out.txt ../up.txt`)).toBe('inoutup');
    });

    asRoot("beyond it, no more than the unprivileged user may: a root-only directory refuses the write and the deletion, with tar's and rm's words", async () => {
      const closed = mkdtempSync(join(tmpdir(), 'warden-closed-'));
      writeFileSync(join(closed, 'keep.txt'), 'root only');
      try {
        const refused = runner.updateFiles({ delete: [join(closed, 'keep.txt')], copy: [{ path: join(closed, 'new.txt'), content: 'x' }, { path: 'fine.txt', content: 'fine' }] });
        await expect(refused).rejects.toBeInstanceOf(RunnerFileError);
        await expect(refused).rejects.toThrow(/Permission denied/);
        expect(existsSync(join(closed, 'keep.txt'))).toBe(true);
        expect(existsSync(join(closed, 'new.txt'))).toBe(false);
        // What stays within the working directory is written all the same.
        expect(await output(runner, 'cat fine.txt')).toBe('fine');
      } finally {
        rmSync(closed, { recursive: true, force: true });
      }
    });
  });

  asRoot('exec: absolute paths are within the runner\'s own filesystem (its chroot on Nomad): written as root, as Poseidon does', async () => {
    await h.driveUntil(() => h.pools.environment(ids.exec)?.idleRunners === 1);
    const runner = h.pools.claim(ids.exec);
    const dir = mkdtempSync(join(tmpdir(), 'warden-chroot-'));
    try {
      await runner.updateFiles({ copy: [{ path: `${dir}/abs.txt`, content: 'abs' }] });
      expect(statSync(join(dir, 'abs.txt')).uid).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await h.settled(runner.destroy());
    }
  });
});
