/**
 * `npm run test:live`: the live tier. Starts a Consul and a Nomad dev agent (Nomad registering with
 * that Consul), runs every live suite (test/live, and test/conformance against the real agent) with
 * Jest, then purges what the suites left (a left job fails the run: a suite must clean up after
 * itself), stops the agents and removes their data dirs, however the run ends. Arguments go to Jest
 * (`npm run test:live -- test/live/gate`); without arguments, the timing suites (ALONE) run after the
 * rest, alone.
 *
 * The suites reach the agents through WARDEN_LIVE_* variables only; the caller's NOMAD_* and CONSUL_*
 * are removed, so a live run can never touch a cluster of the user's.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { findBinary, startConsul, startNomad, type Agent } from './support/agents.js';
import { cleanUpAfter } from './support/cleanup.js';
import { failuresIn } from './support/failures.js';
import { summarizeFigures } from './support/figures.js';

const root = join(import.meta.dirname, '..', '..');
const began = performance.now();

/**
 * Suites that run after the others, alone: the health suite compares Warden's timing with Nomad's
 * client's, and loads both cores in its CPU-load part; beside another suite each disturbs the other
 * (seen: a client's sync seconds late, a conformance bound missed).
 */
const ALONE = ['test/live/health.test.ts'];

function say(line: string): void {
  process.stderr.write(`live tier: ${line}\n`);
}

/** Stops and purges every job the suites left; returns their IDs. */
async function purgeLeftJobs(nomad: Agent): Promise<string[]> {
  const response = await request(`${nomad.address}/v1/jobs?namespace=*`);
  const jobs = (await response.body.json()) as { ID: string; Namespace?: string }[];
  for (const job of jobs) {
    const namespace = encodeURIComponent(job.Namespace ?? 'default');
    await (await request(`${nomad.address}/v1/job/${encodeURIComponent(job.ID)}?purge=true&namespace=${namespace}`, { method: 'DELETE' })).body.text();
  }
  return jobs.map((job) => job.ID);
}

function suiteEnvironment(consul: Agent, nomad: Agent, figures: string, binaries: { nomad: string; consul: string }): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!/^(NOMAD|CONSUL)_/.test(key)) env[key] = value;
  return {
    ...env,
    WARDEN_LIVE_NOMAD_ADDR: nomad.address,
    WARDEN_LIVE_CONSUL_ADDR: consul.address,
    WARDEN_LIVE_NOMAD_BIN: binaries.nomad,
    WARDEN_LIVE_CONSUL_BIN: binaries.consul,
    WARDEN_LIVE_FIGURES: figures,
  };
}

/** Runs Jest on the live config; its report (what failed) goes to `report`. */
function runJest(env: NodeJS.ProcessEnv, args: readonly string[], report: string): Promise<number> {
  const jest = join(root, 'node_modules', 'jest', 'bin', 'jest.js');
  const child = spawn(process.execPath, [jest, '-c', join(root, 'jest.live.config.js'), '--json', '--outputFile', report, ...args], { cwd: root, env, stdio: 'inherit' });
  const forward = (name: NodeJS.Signals): void => void child.kill(name);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  return new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      resolve(code ?? (signal === null ? 1 : 128));
    });
  });
}

async function main(): Promise<number> {
  const binaries = { nomad: findBinary('nomad', 'NOMAD_BIN'), consul: findBinary('consul', 'CONSUL_BIN') };
  const agents: Agent[] = [];
  const figuresDir = mkdtempSync(join(tmpdir(), 'warden-live-figures-'));
  let watchdog: ReturnType<typeof spawn> | undefined;
  try {
    const consul = await startConsul({ binary: binaries.consul });
    agents.push(consul);
    const nomad = await startNomad({ binary: binaries.nomad, consul });
    agents.push(nomad);
    say(`Nomad ${nomad.address} (${binaries.nomad}), Consul ${consul.address} (${binaries.consul}), ready after ${Math.round(performance.now() - began)} ms`);
    watchdog = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'support', 'watchdog.ts'), String(process.pid)], {
      cwd: root,
      detached: true,
      stdio: 'ignore',
      env: { ...process.env, WARDEN_LIVE_WATCHDOG: JSON.stringify({ pids: agents.map((a) => a.pid), dataDirs: agents.map((a) => a.dataDir), graceMs: 20_000 }) },
    });
    watchdog.unref();

    const figures = join(figuresDir, 'figures.jsonl');
    const env = suiteEnvironment(consul, nomad, figures, binaries);
    const args = process.argv.slice(2);
    // Asked for particular suites: those, as asked. Else every suite, then the timing suites alone.
    const [report, aloneReport] = [join(figuresDir, 'jest.json'), join(figuresDir, 'jest-alone.json')];
    let code = await runJest(env, args.length > 0 ? args : ['--testPathIgnorePatterns', '/node_modules/', ...ALONE.map((suite) => `<rootDir>/${suite}`)], report);
    if (args.length === 0) {
      say(`then alone: ${ALONE.join(', ')}`);
      code = (await runJest(env, ALONE, aloneReport)) || code;
    }
    const left = await purgeLeftJobs(nomad);
    if (left.length > 0) {
      say(`FAILED: the suites left ${left.length} job(s) behind (purged now): ${left.join(', ')}`);
      code ||= 1;
    }
    const summary = summarizeFigures(figures);
    if (Object.keys(summary).length > 0) process.stdout.write(`${JSON.stringify({ liveFigures: summary }, null, 2)}\n`);
    for (const failure of [...failuresIn(report), ...failuresIn(aloneReport)]) say(`FAILED: ${failure}`);
    return code;
  } finally {
    if (watchdog?.pid !== undefined) {
      try {
        process.kill(watchdog.pid, 'SIGKILL');
      } catch {
        // already ended
      }
    }
    const killed = await cleanUpAfter({ pids: agents.map((a) => a.pid).reverse(), dataDirs: agents.map((a) => a.dataDir), graceMs: 20_000 });
    if (killed.length > 0) say(`ended ${killed.length} process(es) the agents left running: ${killed.join(', ')}`);
    rmSync(figuresDir, { recursive: true, force: true });
    say(`done in ${Math.round((performance.now() - began) / 1000)} s`);
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    say(`FAILED: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
