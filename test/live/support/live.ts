/**
 * What a live suite needs from the tier: the agents' addresses (WARDEN_LIVE_*, set by test/live/run.ts;
 * a suite run any other way fails at once, never skips), a client, job IDs of its own, purging
 * what it registered, and bounded waits on Nomad's blocking queries (never fixed sleeps).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NomadClient } from '../../../src/nomad/client.js';
import { nomadConfigFromEnv } from '../../../src/nomad/config.js';
import type { NomadResponse } from '../../../src/nomad/transport.js';
import type { Job } from '../../../src/nomad/types.js';
import { SCENARIOS } from '../../supervisor/support/harness.js';

export interface LiveAgents {
  /** http://127.0.0.1:<port> of the Nomad dev agent. */
  readonly nomad: string;
  /** http://127.0.0.1:<port> of the Consul dev agent Nomad registers services with. */
  readonly consul: string;
  readonly nomadBinary: string;
  readonly consulBinary: string;
}

export function liveAgents(): LiveAgents {
  const { WARDEN_LIVE_NOMAD_ADDR: nomad, WARDEN_LIVE_CONSUL_ADDR: consul, WARDEN_LIVE_NOMAD_BIN: nomadBinary, WARDEN_LIVE_CONSUL_BIN: consulBinary } = process.env;
  if (!nomad || !consul || !nomadBinary || !consulBinary) throw new Error('live suites run under the live tier: npm run test:live');
  return { nomad, consul, nomadBinary, consulBinary };
}

/** The environment a Warden command (or `nomad`) gets to reach the live agents, as a user sets it. */
export function liveEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const { nomad, consul } = liveAgents();
  return { PATH: process.env.PATH, HOME: process.env.HOME, NOMAD_ADDR: nomad, CONSUL_HTTP_ADDR: consul, ...extra };
}

export function liveClient(): NomadClient {
  return new NomadClient(nomadConfigFromEnv({ NOMAD_ADDR: liveAgents().nomad }));
}

/** A job ID no other suite or run uses: `warden-live-<name>-<random>`. */
export function uniqueJobId(name: string): string {
  return `warden-live-${name}-${randomBytes(4).toString('hex')}`;
}

/**
 * The jobs a suite registers, purged after it (stop and purge), and the suite's client closed.
 * Call in the suite's body; `track` each job ID before or right after registering it.
 */
export function useLiveJobs(): { readonly client: NomadClient; track(id: string): string } {
  const jobs = new Set<string>();
  let client: NomadClient | undefined;
  afterAll(async () => {
    if (client === undefined) return;
    for (const id of jobs) await client.deregisterJob(id, { purge: true }).catch(() => undefined);
    await client.close();
  });
  return {
    get client() {
      client ??= liveClient();
      return client;
    },
    track(id: string) {
      jobs.add(id);
      return id;
    },
  };
}

/** The longest wait of one blocking query in waitFor: the deadline is kept to within it. */
const BLOCK_MS = 2_000;

/**
 * Asks `query` as a blocking query (each time with the last answer's index, blocking up to `waitMs`)
 * until `done` accepts an answer; rejects after `timeoutMs` saying what it waited for and the last
 * answer seen. For example `waitFor('two running', (index, waitMs) => client.jobAllocations(id, { index, waitMs }), …)`.
 */
export async function waitFor<T>(
  what: string,
  query: (index: number, waitMs: number) => Promise<NomadResponse<T>>,
  done: (body: T) => boolean,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let index = 0;
  let last: T | undefined;
  for (;;) {
    const left = deadline - performance.now();
    if (left <= 0) throw new Error(`waited ${timeoutMs} ms for ${what}; last answer: ${JSON.stringify(last)?.slice(0, 2_000)}`);
    const response = await query(index, Math.max(1, Math.min(BLOCK_MS, Math.floor(left))));
    last = response.body;
    if (done(response.body)) return response.body;
    index = response.meta.lastIndex > index ? response.meta.lastIndex : index;
  }
}

/** Registers a recorded scenario's job.hcl (test/fixtures/nomad-1.1.2/scenarios) under `id`; resolves to the job as registered. */
export async function registerScenarioJob(client: NomadClient, scenario: string, id: string): Promise<Job> {
  const hcl = readFileSync(join(SCENARIOS, scenario, 'job.hcl'), 'utf8');
  const job = await client.parseJob(hcl.replace(/^job "[^"]+"/m, `job "${id}"`), { canonicalize: true });
  await client.registerJob(job);
  return job;
}
