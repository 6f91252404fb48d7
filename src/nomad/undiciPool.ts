/**
 * undici's Pool and its request(), and nothing else of undici. `import { Pool } from 'undici'`
 * evaluates all of it (fetch, WebSocket, cookies, caches, mock agents: 111 files, and Node's own
 * bundled undici through a lazy getter), which was most of the start-up of a short command such as
 * `warden exec`; these two modules load only the HTTP/1 and HTTP/2 clients under a Pool. undici's
 * index is also what puts request() on every dispatcher's prototype, so it is called here as a
 * function of the pool. The paths are undici's own layout (its package.json restricts none), pinned
 * by the minor version in package.json; test/nomad/undiciPool.test.ts holds them to what the
 * package exports.
 */
import type { Dispatcher, Pool as PoolClass } from 'undici';
import apiRequest from 'undici/lib/api/api-request.js';
import UndiciPool from 'undici/lib/dispatcher/pool.js';

export const Pool: typeof PoolClass = UndiciPool;

/** `dispatcher.request(options)`, without undici's index having added it to the prototype. */
export function request(dispatcher: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData> {
  return apiRequest.call(dispatcher, options);
}
