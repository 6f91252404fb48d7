/**
 * The opt-in half of the CLI tests: with NOMAD_ADDR set, the same commands run against that real
 * Nomad (its agent needs the raw_exec driver, as `nomad agent -dev` with raw_exec enabled has).
 * Chosen when the file loads, so without NOMAD_ADDR these suites do not exist at all.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NomadClient } from '../../../src/nomad/client.js';
import { nomadConfigFromEnv } from '../../../src/nomad/config.js';
import { SCENARIOS } from '../../supervisor/support/harness.js';

export const LIVE = process.env.NOMAD_ADDR !== undefined && process.env.NOMAD_ADDR !== '';

/** `describe` when a real Nomad is configured; otherwise nothing is declared. */
export const describeLive: (name: string, body: () => void) => void = LIVE ? describe : () => undefined;

/** Registers a recorded scenario's job.hcl under a fresh id; resolves to that id. */
export async function registerScenarioJob(client: NomadClient, scenario: string): Promise<string> {
  const hcl = readFileSync(join(SCENARIOS, scenario, 'job.hcl'), 'utf8');
  const id = `warden-live-${scenario.replace(/_/g, '-')}-${process.pid}-${Math.floor(Math.random() * 1e6)}`;
  const job = await client.parseJob(hcl.replace(/^job "[^"]+"/m, `job "${id}"`), { canonicalize: true });
  await client.registerJob(job);
  return id;
}

export function liveClient(): NomadClient {
  return new NomadClient(nomadConfigFromEnv(process.env));
}
