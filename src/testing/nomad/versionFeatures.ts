/**
 * What FakeNomad serves differently as the Nomad release it plays (FakeNomadOptions.version), each
 * with the releases that brought it. The health rules' own changes are machines/nomadRules.ts; where
 * a wire change is one of them (system-job deployments, Nomad's service checks, disconnected
 * clients), it is read from there. Not played: 1.3's compression by gorilla's CompressHandler
 * (deflate too), 1.9's port objects without their zero fields.
 */
import { hasChange, parseNomadVersion } from '../../../machines/nomadVersion.js';
import { nomadRulesFor } from '../../../machines/nomadRules.js';

/** A Nomad release: "1.1.2", "1.6.3", "1.11"; "2.0" plays 2.0.5. */
export type FakeNomadVersion = `${number}.${number}` | `${number}.${number}.${number}`;

/** Wire changes that are not health rules. */
const WIRE_CHANGES = {
  /** `namespace=*` on the event stream matches every namespace (it matched none before). */
  namespaceWildcard: ['1.2.0'],
  /** `Authorization: Bearer <token>` accepted beside X-Nomad-Token (command/agent/http.go parseToken). */
  bearerToken: ['1.4.0'],
  /** The exec session's normal end is a TCP close with no close frame. */
  execEndWithoutCloseFrame: ['1.5.15', '1.6.8', '1.7.5', '1.8.0'],
  /** A refused event stream subscription answers 403 (500 before). */
  eventStreamForbidden: ['1.10.0'],
  /** The event stream is served on the hijacked connection: close-delimited, never gzipped, a refusal an empty 200. */
  hijackedEventStream: ['1.11.2'],
  /** A purge is published, as JobDeregistered with `Deleted: true`. */
  purgeEvents: ['2.0.0'],
  /** Exec token and command errors come as close frames after the upgrade (HTTP errors before). */
  execErrorsAfterUpgrade: ['2.0.3'],
} as const;

export interface FakeNomadFeatures {
  /** The version /v1/agent/self reports. */
  readonly version: string;
  readonly namespaceWildcard: boolean;
  readonly bearerToken: boolean;
  readonly execEndWithoutCloseFrame: boolean;
  readonly eventStreamForbidden: boolean;
  readonly hijackedEventStream: boolean;
  readonly purgeEvents: boolean;
  readonly execErrorsAfterUpgrade: boolean;
  /** ClientStatus `unknown` for a disconnected client, and `Reconnected` task events (1.3.0). */
  readonly disconnectedClients: boolean;
  /** GET /v1/allocation/:id/checks, Nomad's own service checks (1.4.0). */
  readonly nomadServiceChecks: boolean;
  /** System jobs get the default update strategy and deployments (1.11.0). */
  readonly systemJobDeployments: boolean;
}

/** The release FakeNomad plays: "2.0" is 2.0.5, the newest one read. */
export function servedVersion(version: FakeNomadVersion): string {
  return version === '2.0' ? '2.0.5' : version;
}

export function fakeNomadFeatures(version: FakeNomadVersion = '1.1.2'): FakeNomadFeatures {
  const served = servedVersion(version);
  const parsed = parseNomadVersion(served);
  if (parsed === null) throw new Error(`FakeNomad: ${JSON.stringify(version)} is not a Nomad version`);
  const { rules } = nomadRulesFor(served);
  const wire = (name: keyof typeof WIRE_CHANGES): boolean => hasChange(parsed, WIRE_CHANGES[name]);
  return {
    version: served,
    namespaceWildcard: wire('namespaceWildcard'),
    bearerToken: wire('bearerToken'),
    execEndWithoutCloseFrame: wire('execEndWithoutCloseFrame'),
    eventStreamForbidden: wire('eventStreamForbidden'),
    hijackedEventStream: wire('hijackedEventStream'),
    purgeEvents: wire('purgeEvents'),
    execErrorsAfterUpgrade: wire('execErrorsAfterUpgrade'),
    disconnectedClients: rules.disconnectedClients,
    nomadServiceChecks: rules.nomadServiceChecks,
    systemJobDeployments: rules.systemJobDeployments,
  };
}
