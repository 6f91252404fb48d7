/**
 * A Nomad namespace of a live suite's own. Whatever manages runner pools (an in-process RunnerPools,
 * a `warden serve`) recovers and manages every environment of its namespace: two suites sharing one
 * would fill each other's pools.
 */
import { randomBytes } from 'node:crypto';
import { NomadClient } from '../../../src/nomad/client.js';
import { nomadConfigFromEnv } from '../../../src/nomad/config.js';
import { liveAgents, liveEnv } from './live.js';

export interface LiveNamespace {
  readonly name: string;
  /** NOMAD_NAMESPACE for the serve processes. */
  readonly env: NodeJS.ProcessEnv;
  /** The live agents' environment with the namespace (for nomadConfigFromEnv). */
  liveEnv(): NodeJS.ProcessEnv;
  /** A client of the namespace. */
  client(): NomadClient;
  create(): Promise<void>;
  /** Purges its jobs and deletes it: call once nothing writes to it any more (serve stopped). */
  remove(): Promise<void>;
}

export function liveNamespace(name: string): LiveNamespace {
  const { nomad } = liveAgents();
  const namespace = `${name}-${randomBytes(3).toString('hex')}`;
  const create = async (): Promise<void> => {
    const created = await fetch(`${nomad}/v1/namespace/${namespace}`, { method: 'PUT', body: JSON.stringify({ Name: namespace, Description: 'a warden live suite' }) });
    if (created.status !== 200) throw new Error(`namespace ${namespace}: ${created.status} ${await created.text()}`);
  };
  const remove = async (): Promise<void> => {
    const jobs = (await (await fetch(`${nomad}/v1/jobs?namespace=${namespace}`)).json()) as { ID: string }[];
    for (const job of jobs) await (await fetch(`${nomad}/v1/job/${encodeURIComponent(job.ID)}?purge=true&namespace=${namespace}`, { method: 'DELETE' })).text();
    // Purged jobs are gone at once, so the namespace can go. No forced garbage collection
    // (PUT /v1/system/gc): it collects every dead job of the cluster, other suites' too (a
    // conformance case running beside this one lost its dead batch job to it: 404).
    const deleted = await fetch(`${nomad}/v1/namespace/${namespace}`, { method: 'DELETE' });
    if (deleted.status !== 200) throw new Error(`namespace ${namespace} not deleted: ${deleted.status} ${await deleted.text()}`);
  };
  const env = { NOMAD_NAMESPACE: namespace };
  return { name: namespace, env, liveEnv: () => liveEnv(env), client: () => new NomadClient(nomadConfigFromEnv(liveEnv(env))), create, remove };
}
