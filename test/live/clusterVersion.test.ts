/**
 * Asking a real Nomad its release (issue 21): each of the three sources Warden reads
 * (src/nomad/clusterVersion.ts) names the agent's release, the supervisor's ClusterRelease picks
 * that release's rules, and FakeNomad playing the same release answers the same.
 */
import { execFileSync } from 'node:child_process';
import { nomadRulesFor } from '../../machines/nomadRules.js';
import { ClusterRelease } from '../../src/intake/clusterRelease.js';
import { systemClock } from '../../src/clock/index.js';
import { silentLogger } from '../../src/logger.js';
import { nomadConfigFromEnv } from '../../src/nomad/config.js';
import { NomadClient } from '../../src/nomad/client.js';
import { readClusterVersion } from '../../src/nomad/clusterVersion.js';
import { FakeNomad, type FakeNomadVersion } from '../../src/testing/index.js';
import { liveAgents, liveClient } from './support/live.js';

/** The release of the binary the live tier started, as `nomad version` prints it ("Nomad v1.1.2 (…)"). */
function binaryRelease(): string {
  const printed = execFileSync(liveAgents().nomadBinary, ['version'], { encoding: 'utf8' });
  const match = /Nomad v(\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?)/.exec(printed);
  if (match === null) throw new Error(`nomad version printed no release: ${printed}`);
  return match[1] as string;
}

type Reads = Parameters<typeof readClusterVersion>[0];
const refused = (): Promise<never> => Promise.reject(new Error('Permission denied'));

/** Each source alone: the others refuse, as they do for a token without their capability. */
async function eachSource(client: NomadClient): Promise<unknown[]> {
  const only = (keep: keyof Reads): Reads => ({
    agentSelf: keep === 'agentSelf' ? (options) => client.agentSelf(options) : refused,
    agentMembers: keep === 'agentMembers' ? (options) => client.agentMembers(options) : refused,
    listNodes: keep === 'listNodes' ? (options) => client.listNodes(options) : refused,
  });
  return Promise.all((['agentSelf', 'agentMembers', 'listNodes'] as const).map((keep) => readClusterVersion(only(keep))));
}

describe("the cluster's Nomad release, read from a real agent", () => {
  const release = binaryRelease();

  test('every source names the release the agent runs', async () => {
    expect(await eachSource(liveClient())).toEqual([
      { version: release, source: 'agent/self' },
      { version: release, source: 'agent/members' },
      { version: release, source: 'nodes' },
    ]);
  });

  test("the supervisor judges by that release's rules, a known one (no warning)", async () => {
    const warnings: string[] = [];
    const cluster = new ClusterRelease({ nomad: liveClient(), clock: systemClock, logger: silentLogger, warn: (message) => warnings.push(message) });
    try {
      const rules = await cluster.whenKnown();
      expect(rules).toEqual(nomadRulesFor(release).rules);
      expect(nomadRulesFor(release).known).toBe(true);
      expect(warnings).toEqual([]);
    } finally {
      cluster.close();
    }
  });

  test('FakeNomad playing the same release answers the same', async () => {
    const fake = await FakeNomad.start({ version: release as FakeNomadVersion });
    try {
      const client = new NomadClient(nomadConfigFromEnv({ NOMAD_ADDR: fake.address }));
      expect(await eachSource(client)).toEqual(await eachSource(liveClient()));
    } finally {
      await fake.close();
    }
  });
});
