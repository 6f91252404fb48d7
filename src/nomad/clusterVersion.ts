/**
 * Which Nomad release a cluster runs, as far as the token lets Warden see. No header or status
 * answer carries it (X-Nomad-Index, -Knownleader, -Lastcontact; /v1/status/leader and /peers give
 * addresses only, in every release from 1.1 to 2.0), so, in order:
 *
 * 1. GET /v1/agent/self (agent:read): the agent's own release, `config.Version`;
 * 2. GET /v1/agent/members (node:read): the servers' `Tags.build`;
 * 3. GET /v1/nodes (node:read): the clients' `Version`.
 *
 * Where several agents answer (an upgrade in progress), the oldest release is taken. A token with
 * none of these permissions gets each refusal ("Permission denied") in `problems`.
 */
import type { NomadClient } from './client.js';
import { errorMessage } from '../errorMessage.js';
import { isRetryable } from './errors.js';
import { compareNomadVersions, parseNomadVersion } from '../../machines/nomadVersion.js';

export type ClusterVersionReading =
  | { readonly version: string; readonly source: 'agent/self' | 'agent/members' | 'nodes' }
  | {
      readonly version: undefined;
      readonly problems: readonly string[];
      /** Every source failed as a retry may mend (unreachable, 5xx): asking again may tell. */
      readonly retryable: boolean;
    };

type Reads = Pick<NomadClient, 'agentSelf' | 'agentMembers' | 'listNodes'>;

function oldest(versions: readonly (string | undefined)[]): string | undefined {
  let found: { text: string; parsed: NonNullable<ReturnType<typeof parseNomadVersion>> } | undefined;
  for (const text of versions) {
    const parsed = text === undefined ? null : parseNomadVersion(text);
    if (parsed !== null && (found === undefined || compareNomadVersions(parsed, found.parsed) < 0)) found = { text: parsed.text, parsed };
  }
  return found?.text;
}

async function fromAgentSelf(client: Reads): Promise<string | undefined> {
  const { body } = await client.agentSelf();
  const version = body.config?.Version;
  if (version?.Version) return version.VersionPrerelease ? `${version.Version}-${version.VersionPrerelease}` : version.Version;
  return oldest([body.member?.Tags?.build]);
}

async function fromMembers(client: Reads): Promise<string | undefined> {
  const { body } = await client.agentMembers();
  return oldest((body.Members ?? []).filter((member) => member.Status === undefined || member.Status === 'alive').map((member) => member.Tags?.build));
}

async function fromNodes(client: Reads): Promise<string | undefined> {
  const { body } = await client.listNodes();
  return oldest((Array.isArray(body) ? body : []).filter((node) => node.Status === undefined || node.Status === 'ready').map((node) => node.Version));
}

const SOURCES = [
  ['agent/self', fromAgentSelf],
  ['agent/members', fromMembers],
  ['nodes', fromNodes],
] as const;

/** The cluster's release, from the first source that tells it; else every source's problem. */
export async function readClusterVersion(client: Reads): Promise<ClusterVersionReading> {
  const problems: string[] = [];
  let retryable = true;
  for (const [source, read] of SOURCES) {
    try {
      const version = await read(client);
      if (version !== undefined) return { version, source };
      problems.push(`${source}: no version in the answer`);
      retryable = false;
    } catch (error) {
      problems.push(`${source}: ${errorMessage(error)}`);
      retryable &&= isRetryable(error);
    }
  }
  return { version: undefined, problems, retryable };
}
