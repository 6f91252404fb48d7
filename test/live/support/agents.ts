/**
 * Real Nomad and Consul dev agents for the live tier, as Nomad's own api tests start them: from
 * NOMAD_BIN / CONSUL_BIN or PATH, bound to 127.0.0.1 on free ports, with fresh data dirs and a clean
 * environment (raw_exec tasks inherit the agent's), no update checks and no cloud fingerprinting.
 * Nothing here talks to anything but loopback.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, createWriteStream, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { request } from 'undici';
import { cleanUpAfter } from './cleanup.js';

/** The environment the agents (and so raw_exec tasks) run with: nothing of the caller's. */
export const CLEAN_ENV: Readonly<Record<string, string>> = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' };

export interface Agent {
  readonly name: 'nomad' | 'consul';
  /** http://127.0.0.1:<port> */
  readonly address: string;
  readonly pid: number;
  readonly dataDir: string;
  readonly logFile: string;
  /** Stops the agent (gracefully, then by force), ends whatever it left running and removes its data dir. */
  stop(): Promise<void>;
}

/** The binary named by `variable`, else the first executable `name` on PATH; an Error saying how to get one. */
export function findBinary(name: string, variable: string, env: NodeJS.ProcessEnv = process.env): string {
  const named = env[variable];
  const candidates = named ? [named] : (env.PATH ?? '').split(delimiter).filter(Boolean).map((dir) => join(dir, name));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not this one
    }
  }
  throw new Error(`the live tier needs a ${name} binary: set ${variable} or put ${name} on PATH (.ci/run puts Nomad 1.1.2 and Consul 1.8.7 first on PATH)`);
}

/** A TCP port free on 127.0.0.1 now (the agent may still lose it to a race: start() retries). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function getJson(url: string): Promise<unknown> {
  const response = await request(url, { headersTimeout: 2_000, bodyTimeout: 2_000 });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${text}`);
  return JSON.parse(text) as unknown;
}

/** Polls `ready` until it says yes, the process ends, or `timeoutMs` passes. A bounded wait for a process we cannot subscribe to. */
async function untilReady(child: ChildProcess, ready: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let exited = child.exitCode !== null;
  const onExit = (): void => {
    exited = true;
  };
  child.once('exit', onExit);
  try {
    for (;;) {
      if (exited) throw new Error(`${what} exited before it was ready`);
      if (await ready().catch(() => false)) return;
      if (performance.now() > deadline) throw new Error(`${what} was not ready within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    child.off('exit', onExit);
  }
}

function launch(binary: string, args: readonly string[], dataDir: string, logFile: string, env: Readonly<Record<string, string>> = {}): ChildProcess {
  const log = createWriteStream(logFile);
  // Its own process group, so that whatever it starts can be ended with it.
  const child = spawn(binary, args, { cwd: dataDir, env: { ...CLEAN_ENV, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  return child;
}

async function started(name: Agent['name'], child: ChildProcess, address: string, dataDir: string, logFile: string, ready: () => Promise<boolean>, timeoutMs: number): Promise<Agent> {
  const stop = async (): Promise<void> => void (await cleanUpAfter({ pids: child.pid === undefined ? [] : [child.pid], dataDirs: [dataDir], graceMs: 20_000 }));
  try {
    await untilReady(child, ready, timeoutMs, `${name} agent (log: ${logFile})`);
  } catch (error) {
    await stop();
    throw error;
  }
  return { name, address, pid: child.pid as number, dataDir, logFile, stop };
}

/** A Consul dev agent on free loopback ports (DNS and gRPC off); `hcl`: more configuration (e.g. an acl block). */
export async function startConsul(options: { binary?: string; attempts?: number; hcl?: readonly string[] } = {}): Promise<Agent> {
  const binary = options.binary ?? findBinary('consul', 'CONSUL_BIN');
  for (let attempt = 1; ; attempt++) {
    const [http, lan, wan, server] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const dataDir = mkdtempSync(join(tmpdir(), 'warden-live-consul-'));
    const logFile = join(dataDir, 'agent.log');
    const address = `http://127.0.0.1:${http}`;
    const args = ['agent', '-dev', '-bind', '127.0.0.1', '-client', '127.0.0.1', '-data-dir', join(dataDir, 'data'), '-http-port', String(http), '-dns-port', '-1', '-grpc-port', '-1',
      '-serf-lan-port', String(lan), '-serf-wan-port', String(wan), '-server-port', String(server), '-hcl', 'disable_update_check = true', ...(options.hcl ?? []).flatMap((text) => ['-hcl', text])];
    const child = launch(binary, args, dataDir, logFile);
    try {
      return await started('consul', child, address, dataDir, logFile, async () => {
        const leader = await getJson(`${address}/v1/status/leader`);
        return typeof leader === 'string' && leader !== '';
      }, 30_000);
    } catch (error) {
      if (attempt >= (options.attempts ?? 3)) throw error;
    }
  }
}

export interface NomadAgentOptions {
  binary?: string;
  /** The Consul agent Nomad registers services with; without it Nomad runs with no Consul. */
  consul?: Pick<Agent, 'address'>;
  attempts?: number;
  /** Variables the agent runs with beyond CLEAN_ENV (raw_exec and exec tasks inherit them). */
  env?: Readonly<Record<string, string>>;
}

function nomadConfig(ports: { http: number; rpc: number; serf: number }, consul: string | undefined): string {
  return `bind_addr = "127.0.0.1"
disable_update_check = true
ports {
  http = ${ports.http}
  rpc  = ${ports.rpc}
  serf = ${ports.serf}
}
client {
  options = { "fingerprint.denylist" = "env_aws,env_gce,env_azure,env_digitalocean" }
}
plugin "raw_exec" {
  config { enabled = true }
}
# Every suite connects from 127.0.0.1: Nomad's default of 100 connections per client address is
# soon reached by suites that run dozens of watches and gates side by side (each holds its stream,
# its blocking queries and its reads), and Nomad then closes new connections.
limits {
  http_max_conns_per_client = 1000
}
${consul === undefined ? '' : `consul {\n  address = "${consul.replace(/^https?:\/\//, '')}"\n}\n`}`;
}

interface NodeStub {
  ID: string;
  Status: string;
  Drivers?: Record<string, { Healthy?: boolean; Detected?: boolean }>;
}

/**
 * A Nomad dev agent (server and client in one) on free loopback ports. Ready when it has a leader and
 * its one node is ready with raw_exec healthy (and, with Consul, has fingerprinted it).
 */
export async function startNomad(options: NomadAgentOptions = {}): Promise<Agent> {
  const binary = options.binary ?? findBinary('nomad', 'NOMAD_BIN');
  for (let attempt = 1; ; attempt++) {
    const ports = { http: await freePort(), rpc: await freePort(), serf: await freePort() };
    const dataDir = mkdtempSync(join(tmpdir(), 'warden-live-nomad-'));
    const logFile = join(dataDir, 'agent.log');
    const configFile = join(dataDir, 'agent.hcl');
    writeFileSync(configFile, nomadConfig(ports, options.consul?.address));
    const address = `http://127.0.0.1:${ports.http}`;
    const child = launch(binary, ['agent', '-dev', `-config=${configFile}`, `-data-dir=${join(dataDir, 'data')}`], dataDir, logFile, options.env);
    try {
      return await started('nomad', child, address, dataDir, logFile, async () => {
        const leader = await getJson(`${address}/v1/status/leader`);
        if (typeof leader !== 'string' || leader === '') return false;
        const nodes = (await getJson(`${address}/v1/nodes`)) as NodeStub[];
        const node = nodes.length === 1 && nodes[0]?.Status === 'ready' ? nodes[0] : undefined;
        if (node === undefined || node.Drivers?.raw_exec?.Healthy !== true) return false;
        if (options.consul === undefined) return true;
        const full = (await getJson(`${address}/v1/node/${node.ID}`)) as { Attributes?: Record<string, string> };
        return full.Attributes?.['consul.version'] !== undefined;
      }, 60_000);
    } catch (error) {
      if (attempt >= (options.attempts ?? 3)) throw error;
    }
  }
}
