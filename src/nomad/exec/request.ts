import type { ClientOptions } from 'ws';
import type { NomadConfig } from '../config.js';

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
 * Socket options for the exec websocket: the token as X-Nomad-Token, the same TLS settings as the
 * HTTP client, no compression (Nomad's upgrader offers none).
 */
export function execSocketOptions(config: NomadConfig): ClientOptions {
  const tls = config.tls ?? {};
  // `servername` is honoured by ws at runtime but missing from its types.
  const options: ClientOptions & { servername?: string } = {
    perMessageDeflate: false,
    headers: config.token === undefined ? {} : { 'X-Nomad-Token': config.token },
  };
  if (tls.ca !== undefined) options.ca = tls.ca;
  if (tls.cert !== undefined) options.cert = tls.cert;
  if (tls.key !== undefined) options.key = tls.key;
  if (tls.servername !== undefined) options.servername = tls.servername;
  if (tls.rejectUnauthorized !== undefined) options.rejectUnauthorized = tls.rejectUnauthorized;
  return options;
}
