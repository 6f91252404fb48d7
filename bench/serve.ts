/**
 * `warden serve`'s API, `npx tsx bench/serve.ts`: prints one JSON object. The API runs in this
 * process over runner pools on a FakeNomad acting as a cluster in a process of its own (real
 * processes for executions); each figure has a baseline measured in the same run over the same
 * loopback, with the same client, against a bare node:http / ws server that answers the same
 * shapes doing nothing else:
 * - claims: POST /runners then DELETE of that runner, from a warm pool, CONCURRENCY at a time:
 *   pairs/s vs the bare handler; ratio = Warden ÷ bare (DELETE waits for Nomad's purge, as
 *   Poseidon's does: that round trip is in Warden's figure, and each claim makes the pool register
 *   a replacement). Beside it, the same pairs made on the pools directly (claim(), destroy()): what
 *   the HTTP layer adds over the pools themselves (ratio_to_pools).
 * - claim_latency: one POST /runners at a time from a warm pool of LATENCY_POOL runners, full and at
 *   rest before each claim (the replacement of the previous one registered and running), p50 / p99
 *   (ms) vs the bare handler.
 * - executions: `true` through the WebSocket API (POST …/execute, connect, start … exit, close),
 *   WORKERS runners at once, under a terminal as Poseidon runs them: executions/s vs a bare server
 *   that answers the POST and whose WebSocket sends start and exit at once; beside it, the same
 *   executions through Runner.execute() directly (ratio_to_pools: what the API adds to an exec).
 *
 *   npx tsx bench/serve.ts [--pairs 600] [--concurrency 16] [--claims 400] [--latency-pool 50] [--seconds 5] [--workers 4]
 *
 * Measured (`npx tsx bench/serve.ts`, 2 cores shared with other work, so ±40% from run to run):
 * claims 247-284 pairs/s vs 3,700-5,600 bare (0.05-0.07); the pools alone make 367-443/s (the API
 * keeps 0.56-0.77 of that): a pair is Nomad's writes (a purge, the replacement runner's job, its used
 * mark). Before the runners left the environment's children (XState copied them at each spawn and
 * stop: 1.2 ms per stop at ~600 runners) it was 116-186 pairs/s. Claim latency from a warm pool of
 * 50 at rest: p50 0.77-1.18 ms / p99 2.9-5.7 ms vs bare 0.055-0.085 / 0.88-2.0 ms. `true` over the
 * WebSocket: 64-79 executions/s on 4 runners vs 1,366-1,848 bare ws (0.05); Runner.execute() alone
 * 72/s: an execution under a terminal is two exec sessions and a process on a pty, the API adds
 * little.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import WebSocket, { WebSocketServer } from 'ws';
import { PoseidonApi } from '../src/api/api.js';
import { startApiServer } from '../src/api/server.js';
import { NomadClient } from '../src/nomad/client.js';
import { createRunnerPools, type RunnerPools } from '../src/runners/pools.js';
import { createSupervisor } from '../src/supervisor/index.js';
import { withFakeNomadProcess } from './support/fakeNomadProcess.js';
import { numberOption, percentile, round } from './support/figures.js';

const PAIRS = numberOption('pairs', 600);
const CONCURRENCY = numberOption('concurrency', 16);
const CLAIMS = numberOption('claims', 400);
const SECONDS = numberOption('seconds', 5);
const WORKERS = numberOption('workers', 4);
const LATENCY_POOL = numberOption('latency-pool', 50);
const SETUSER = process.getuid?.() === 0 ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : [];

const now = (): number => performance.now();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const agent = new Agent({ connections: CONCURRENCY * 2, keepAliveTimeout: 30_000 });

interface Target {
  base: string;
  close(): Promise<void>;
}

async function call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const answer = await request(url, { method, dispatcher: agent, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }) });
  const text = await answer.body.text();
  return { status: answer.statusCode, json: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

/** The bare baseline: the same routes and shapes, nothing behind them. */
async function bareServer(): Promise<Target> {
  let next = 0;
  const sockets = new WebSocketServer({ noServer: true });
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      if (req.method === 'POST' && path === '/api/v1/runners') {
        const body = JSON.stringify({ runnerId: `1-bare-${next++}`, mappedPorts: [] });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
      } else if (req.method === 'POST' && path.endsWith('/execute')) {
        const { port } = server.address() as AddressInfo;
        const body = JSON.stringify({ websocketUrl: `ws://127.0.0.1:${port}${path.replace(/execute$/, 'websocket')}?executionID=${next++}` });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
      } else res.writeHead(204, { 'content-length': 0 }).end();
    });
  });
  server.on('upgrade', (req, socket, head) =>
    sockets.handleUpgrade(req, socket, head, (ws) => {
      ws.send(JSON.stringify({ type: 'start' }));
      ws.send(JSON.stringify({ type: 'exit', data: 0 }));
      ws.close(1000);
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}/api/v1`,
    close: async () => {
      sockets.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** POST /runners + DELETE pairs, CONCURRENCY at a time: pairs/s and how many claims found no runner. */
async function claimPairs(base: string, environmentId: number): Promise<{ per_s: number; empty: number }> {
  let started = 0;
  let empty = 0;
  const begin = now();
  const worker = async (): Promise<void> => {
    while (started < PAIRS) {
      started += 1;
      const claim = await call('POST', `${base}/runners`, { executionEnvironmentId: environmentId, inactivityTimeout: 60 });
      if (claim.status !== 200) {
        empty += 1;
        continue;
      }
      const { runnerId } = claim.json as { runnerId: string };
      const deleted = await call('DELETE', `${base}/runners/${runnerId}`);
      if (deleted.status !== 204) throw new Error(`DELETE answered ${deleted.status}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { per_s: round((PAIRS - empty) / ((now() - begin) / 1000), 1), empty };
}

/** The same pairs on the pools directly, CONCURRENCY at a time. */
async function directPairs(pools: RunnerPools, environmentId: number): Promise<number> {
  let started = 0;
  const begin = now();
  const worker = async (): Promise<void> => {
    while (started < PAIRS) {
      started += 1;
      await pools.claim(environmentId, { inactivityTimeoutS: 60 }).destroy();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return round(PAIRS / ((now() - begin) / 1000), 1);
}

/** `true` through Runner.execute() directly, one at a time per runner, for SECONDS. */
async function directExecutions(pools: RunnerPools, runners: readonly string[]): Promise<number> {
  let done = 0;
  const end = now() + SECONDS * 1000;
  const begin = now();
  const worker = async (runnerId: string): Promise<void> => {
    const runner = pools.requireRunner(runnerId);
    while (now() < end) {
      const execution = runner.execute({ command: 'true', tty: true, stdin: 'pipe', env: { CODEOCEAN: 'true' } });
      execution.stdout.resume();
      execution.stderr.resume();
      const outcome = await execution.outcome;
      if (outcome.status === 'exited' && outcome.exitCode === 0) done += 1;
    }
  };
  await Promise.all(runners.map(worker));
  return round(done / ((now() - begin) / 1000), 1);
}

/** One claim at a time, each from a full pool at rest (`ready`, when given, waits for it): latency in ms. */
async function claimLatency(base: string, environmentId: number, ready?: () => Promise<void>): Promise<{ latencies: number[]; runners: string[] }> {
  const latencies: number[] = [];
  const runners: string[] = [];
  for (let i = 0; i < CLAIMS; i++) {
    await ready?.();
    const start = now();
    const claim = await call('POST', `${base}/runners`, { executionEnvironmentId: environmentId, inactivityTimeout: 60 });
    latencies.push(now() - start);
    if (claim.status !== 200) throw new Error(`claim answered ${claim.status}`);
    runners.push((claim.json as { runnerId: string }).runnerId);
  }
  return { latencies, runners };
}

/** `true` over the WebSocket API, one execution at a time per runner, for SECONDS: executions/s. */
async function executions(base: string, runners: readonly string[]): Promise<{ per_s: number; failed: number }> {
  let done = 0;
  let failed = 0;
  const end = now() + SECONDS * 1000;
  const begin = now();
  const worker = async (runnerId: string): Promise<void> => {
    while (now() < end) {
      const { json } = await call('POST', `${base}/runners/${runnerId}/execute`, { command: 'true' });
      const ws = new WebSocket((json as { websocketUrl: string }).websocketUrl, { perMessageDeflate: false });
      let last = '';
      ws.on('message', (data) => (last = (data as Buffer).toString()));
      await new Promise((resolve) => ws.on('close', resolve));
      if (last === '{"type":"exit","data":0}') done += 1;
      else failed += 1;
    }
  };
  await Promise.all(runners.map(worker));
  return { per_s: round(done / ((now() - begin) / 1000), 1), failed };
}

async function wardenOver(address: string): Promise<Target & { pools: RunnerPools }> {
  const nomad = new NomadClient({ address }, { gzip: false });
  const supervisor = createSupervisor({ nomad });
  const pools = createRunnerPools(supervisor, { setuser: SETUSER });
  await pools.ready;
  const api = new PoseidonApi({ pools, environmentDefaults: { driver: 'raw_exec' } });
  const server = await startApiServer(api, { listen: { host: '127.0.0.1', port: 0 } });
  return {
    base: `${server.url}/api/v1`,
    pools,
    close: async () => {
      await server.close(() => supervisor.stop());
      await nomad.close();
    },
  };
}

async function fill(target: Target & { pools: RunnerPools }, id: number, size: number): Promise<void> {
  const put = await call('PUT', `${target.base}/execution-environments/${id}`, { prewarmingPoolSize: size, cpuLimit: 20, memoryLimit: 0, image: 'local', networkAccess: false, exposedPorts: [] });
  if (put.status !== 201 && put.status !== 204) throw new Error(`PUT environment answered ${put.status}`);
  while (target.pools.environment(id)?.idleRunners !== size) await sleep(20);
}

async function main(): Promise<void> {
  const bare = await bareServer();
  const result = await withFakeNomadProcess(async (address) => {
    const warden = await wardenOver(address);
    try {
      // Claims and deletes from a warm pool large enough that no claim finds it empty.
      await fill(warden, 1, PAIRS + CONCURRENCY);
      const bareFirst = await claimPairs(bare.base, 1);
      const pairs = await claimPairs(warden.base, 1);
      const bareSecond = await claimPairs(bare.base, 1);
      const barePairs = Math.max(bareFirst.per_s, bareSecond.per_s);
      await fill(warden, 1, PAIRS + CONCURRENCY);
      const poolPairs = await directPairs(warden.pools, 1);

      // A pool of a realistic size, full again before each claim: the claim's own latency, not the refill's.
      await fill(warden, 2, LATENCY_POOL);
      const bareLatency = await claimLatency(bare.base, 2);
      const latency = await claimLatency(warden.base, 2, async () => {
        while (warden.pools.environment(2)?.idleRunners !== LATENCY_POOL) await sleep(1);
        await sleep(2);
      });
      await Promise.all(latency.runners.map((runnerId) => call('DELETE', `${warden.base}/runners/${runnerId}`)));

      await fill(warden, 3, WORKERS);
      const runners = (await Promise.all(Array.from({ length: WORKERS }, () => call('POST', `${warden.base}/runners`, { executionEnvironmentId: 3, inactivityTimeout: 600 })))).map(
        ({ json }) => (json as { runnerId: string }).runnerId,
      );
      const bareRuns = await executions(bare.base, runners.map((_, i) => `1-bare-runner-${i}`));
      const runs = await executions(warden.base, runners);
      const poolRuns = await directExecutions(warden.pools, runners);
      return {
        claims: {
          pairs: PAIRS,
          concurrency: CONCURRENCY,
          warden_pairs_per_s: pairs.per_s,
          empty_pool_claims: pairs.empty,
          bare_pairs_per_s: barePairs,
          ratio: round(pairs.per_s / barePairs, 3),
          pools_direct_pairs_per_s: poolPairs,
          ratio_to_pools: round(pairs.per_s / poolPairs, 3),
        },
        claim_latency: {
          claims: CLAIMS,
          pool_size: LATENCY_POOL,
          warden_p50_ms: round(percentile(latency.latencies, 0.5), 3),
          warden_p99_ms: round(percentile(latency.latencies, 0.99), 3),
          bare_p50_ms: round(percentile(bareLatency.latencies, 0.5), 3),
          bare_p99_ms: round(percentile(bareLatency.latencies, 0.99), 3),
          ratio_p50: round(percentile(latency.latencies, 0.5) / percentile(bareLatency.latencies, 0.5), 2),
          ratio_p99: round(percentile(latency.latencies, 0.99) / percentile(bareLatency.latencies, 0.99), 2),
        },
        executions: {
          command: 'true',
          runners: WORKERS,
          tty: true,
          seconds: SECONDS,
          warden_per_s: runs.per_s,
          warden_failed: runs.failed,
          bare_ws_per_s: bareRuns.per_s,
          ratio: round(runs.per_s / bareRuns.per_s, 4),
          pools_direct_per_s: poolRuns,
          ratio_to_pools: round(runs.per_s / poolRuns, 3),
        },
      };
    } finally {
      await warden.close();
    }
  }, { exec: true });
  await bare.close();
  await agent.close();
  console.log(JSON.stringify(result, null, 2));
}

await main();
