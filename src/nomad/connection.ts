/**
 * How to reach a cluster, derived from a NomadConfig once and shared by the HTTP pool and the exec
 * websocket: the origin to dial, the socket options (Unix socket, TLS/mTLS) and the headers every
 * request carries.
 */
import { registerAddressCredentials, registerSecret } from '../secrets.js';
import type { NomadConfig } from './config.js';
import { normalizeAddress } from './config.js';

/** Socket options for a TLS connection (node:tls names, as undici's `connect` and ws take them). */
export interface NomadConnectOptions {
  ca?: string[];
  cert?: string;
  key?: string;
  servername?: string;
  rejectUnauthorized?: boolean;
}

export interface NomadEndpoint {
  /** http(s)://host:port to dial; for a Unix socket, http://localhost (Nomad rewrites the host too). */
  origin: string;
  /** Present for unix:// addresses. */
  socketPath?: string;
  /** Present for https:// addresses. */
  tls?: NomadConnectOptions;
}

/** Where to connect for `config.address`, with the TLS settings that apply to it. */
export function nomadEndpoint(config: NomadConfig): NomadEndpoint {
  const url = new URL(normalizeAddress(config.address));
  if (url.protocol === 'unix:') {
    return { origin: 'http://localhost', socketPath: decodeURIComponent(url.pathname) };
  }
  const endpoint: NomadEndpoint = { origin: url.origin };
  if (url.protocol === 'https:') endpoint.tls = tlsConnectOptions(config);
  return endpoint;
}

/** The TLS options (ca, cert, key, servername, rejectUnauthorized) set in `config`, others left out. */
export function tlsConnectOptions(config: NomadConfig): NomadConnectOptions {
  const tls = config.tls ?? {};
  const options: NomadConnectOptions = {};
  if (tls.ca !== undefined && tls.ca.length > 0) options.ca = [...tls.ca];
  if (tls.cert !== undefined) options.cert = tls.cert;
  if (tls.key !== undefined) options.key = tls.key;
  if (tls.servername !== undefined) options.servername = tls.servername;
  if (tls.rejectUnauthorized !== undefined) options.rejectUnauthorized = tls.rejectUnauthorized;
  return options;
}

/**
 * Headers every request to the cluster carries: the ACL token, when there is one. X-Nomad-Token,
 * not `Authorization: Bearer`: every Nomad reads X-Nomad-Token (and checks it first), Bearer only
 * 1.4+; the exec websocket's upgrade carries the same header. Every connection (HTTP pool, exec
 * websocket) is configured through here, so it registers the token and the address's userinfo
 * for scrubbing (src/secrets.ts) before anything can come back.
 */
export function nomadAuthHeaders(config: NomadConfig): Record<string, string> {
  registerSecret(config.token);
  registerAddressCredentials(config.address);
  return config.token === undefined ? {} : { 'x-nomad-token': config.token };
}
