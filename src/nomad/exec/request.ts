import type { ClientOptions } from 'ws';
import type { NomadConfig } from '../config.js';
import { nomadAuthHeaders, tlsConnectOptions } from '../connection.js';

/** What to run, and where: the query of /v1/client/allocation/:id/exec. */
export interface ExecRequest {
  allocId: string;
  task: string;
  /** argv: Nomad runs it without a shell. */
  command: readonly string[];
  tty: boolean;
}

/** The exec websocket URL for a request (nomad-protocol §3.1); the token never goes in it. */
export function execUrl(config: NomadConfig, request: ExecRequest): string {
  const query = new URLSearchParams({
    task: request.task,
    command: JSON.stringify(request.command),
    tty: String(request.tty),
  });
  if (config.namespace !== undefined) query.set('namespace', config.namespace);
  if (config.region !== undefined) query.set('region', config.region);
  const path = `/v1/client/allocation/${encodeURIComponent(request.allocId)}/exec?${query.toString()}`;
  const address = new URL(config.address);
  if (address.protocol === 'unix:') return `ws+unix://${address.pathname}:${path}`;
  const scheme = address.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${address.host}${path}`;
}

/**
 * Socket options for the exec websocket: the same token header and TLS settings as the HTTP client
 * (src/nomad/connection), no compression (Nomad's upgrader offers none).
 */
export function execSocketOptions(config: NomadConfig): ClientOptions {
  return { perMessageDeflate: false, headers: nomadAuthHeaders(config), ...tlsConnectOptions(config) };
}
