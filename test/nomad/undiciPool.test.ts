import { createServer } from 'node:http';
import * as undici from 'undici';
import apiRequest from 'undici/lib/api/api-request.js';
import { Pool, request } from '../../src/nomad/undiciPool.js';

test("the modules loaded by path are the Pool and the request() undici's package exports", () => {
  expect(Pool).toBe(undici.Pool);
  expect(apiRequest).toBe(undici.Pool.prototype.request);
});

test('request() runs on a Pool as its method would', async () => {
  const server = createServer((req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(`${req.method} ${req.url}`));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const pool = new Pool(`http://127.0.0.1:${port}`);
  try {
    const response = await request(pool, { method: 'GET', path: '/v1/jobs?prefix=a' });
    expect(response.statusCode).toBe(200);
    await expect(response.body.text()).resolves.toBe('GET /v1/jobs?prefix=a');
  } finally {
    await pool.close();
    await new Promise((resolve) => server.close(resolve));
  }
});
