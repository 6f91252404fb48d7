/**
 * The API on a node:http (or https) server of its own: Poseidon's routes under /api/v1, WebSocket
 * upgrades, and Prometheus metrics at /metrics when given. Closing it stops accepting, tells open
 * executions the server is going away, then ends the remaining connections.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { systemClock, type Clock } from '../clock/index.js';
import { handleMetricsRequest, METRICS_PATH, type ListenAddress } from '../metrics/server.js';
import type { WardenMetrics } from '../metrics/wardenMetrics.js';
import type { PoseidonApi } from './api.js';

export interface ApiServerOptions {
  listen: ListenAddress;
  /** Served at /metrics (no token: Prometheus scrapes it). */
  metrics?: Pick<WardenMetrics, 'scrape'>;
  /** Serve HTTPS (and wss://) with this certificate chain and key (PEM). */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** For the grace periods of close() (default: the system clock). */
  clock?: Clock;
  /** How long close() lets requests in flight finish before their connections are cut (default 5 s). */
  drainMs?: number;
}

export interface ApiServer {
  /** http(s)://host:port, the port actually bound; the API is under `${url}/api/v1`. */
  readonly url: string;
  readonly server: Server;
  /**
   * Stops accepting, ends executions with a message (see PoseidonApi.close), runs `whileDraining`
   * (stop the pools: requests waiting on them are answered), lets requests in flight finish (at
   * most drainMs), then closes every connection.
   */
  close(whileDraining?: () => Promise<void>): Promise<void>;
}

export async function startApiServer(api: PoseidonApi, options: ApiServerOptions): Promise<ApiServer> {
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === METRICS_PATH && options.metrics !== undefined) void handleMetricsRequest(options.metrics, req, res);
    else void api.handle(req, res);
  };
  const server: Server = options.tls === undefined ? createServer(handler) : createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, handler);
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => api.handleUpgrade(req, socket, head));
  // A stray byte on a connection is the client's problem, not the server's.
  server.on('clientError', (_error, socket: Socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    else socket.destroy();
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.listen.port, options.listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  let closing: Promise<void> | undefined;
  return {
    url: `${options.tls === undefined ? 'http' : 'https'}://${host}:${port}`,
    server,
    close: (whileDraining) =>
      (closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        await api.close();
        await whileDraining?.();
        const clock = options.clock ?? systemClock;
        let timer: unknown;
        await Promise.race([closed, new Promise<void>((resolve) => (timer = clock.setTimeout(resolve, options.drainMs ?? 5_000)))]);
        clock.clearTimeout(timer);
        server.closeAllConnections();
        await closed;
      })()),
  };
}
