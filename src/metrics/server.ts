/**
 * Serving the metrics: a request handler any node:http server can mount at /metrics (`warden serve`
 * does), and a small server of its own for `warden watch --metrics [addr]`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorMessage } from '../errorMessage.js';
import type { ListenAddress } from './listenAddress.js';
import type { WardenMetrics } from './wardenMetrics.js';

export { parseListenAddress, type ListenAddress } from './listenAddress.js';

export const METRICS_PATH = '/metrics';

/** Answers GET/HEAD with the Prometheus text format; anything else 405. Mount it at /metrics. */
export async function handleMetricsRequest(metrics: Pick<WardenMetrics, 'scrape'>, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
    return;
  }
  try {
    const { contentType, body } = await metrics.scrape();
    res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
  } catch (error) {
    res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`collecting metrics failed: ${errorMessage(error)}\n`);
  }
}

export interface MetricsServer {
  /** http://host:port/metrics, with the port actually bound. */
  readonly url: string;
  close(): Promise<void>;
}

/** Serves `metrics` at /metrics on `address` (404 elsewhere). */
export async function serveMetrics(metrics: Pick<WardenMetrics, 'scrape'>, address: ListenAddress): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path === METRICS_PATH) void handleMetricsRequest(metrics, req, res);
    else res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(`not found; metrics are at ${METRICS_PATH}\n`);
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => resolve());
  });
  const { address: host, port } = server.address() as AddressInfo;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}${METRICS_PATH}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
