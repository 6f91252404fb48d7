import { join } from 'node:path';
import { request } from 'undici';
import { VirtualClock } from '../../src/clock/index.js';
import { FakeNomad, type FakeNomadOptions } from '../../src/testing/fakeNomad.js';

export const FIXTURES = join(__dirname, '..', 'fixtures', 'nomad-1.1.2');

export interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

/** One HTTP request over loopback; header names lower-cased. */
export async function call(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await request(`${base}${path}`, {
    method: method as 'GET',
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await response.body.text();
  const flat: Record<string, string> = {};
  for (const [key, value] of Object.entries(response.headers)) if (value !== undefined) flat[key] = String(value);
  return { status: response.statusCode, headers: flat, text };
}

/** A small service job spec as /v1/jobs/parse would give it. */
export function serviceJob(id: string, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ID: id, Name: id, Type: 'service', Datacenters: ['dc1'],
    Update: { HealthCheck: 'task_states', MinHealthyTime: 2e9, HealthyDeadline: 20e9, ProgressDeadline: 30e9 },
    TaskGroups: [{
      Name: 'app', Count: 2,
      Tasks: [{ Name: 'main', Driver: 'raw_exec', Config: { command: '/bin/sh' }, Resources: { CPU: 20, MemoryMB: 16 } }],
    }],
    ...fields,
  };
}

/** A fresh FakeNomad on a fresh VirtualClock for every test of the enclosing describe. */
export function useFake(options: Omit<FakeNomadOptions, 'clock'> = {}, start = Date.UTC(2026, 10, 29, 17)): { readonly fake: FakeNomad; readonly clock: VirtualClock } {
  const current: { fake?: FakeNomad; clock?: VirtualClock } = {};
  beforeEach(async () => {
    current.clock = new VirtualClock({ start });
    current.fake = await FakeNomad.start({ ...options, clock: current.clock });
  });
  afterEach(() => current.fake?.close());
  return {
    get fake() { return current.fake!; },
    get clock() { return current.clock!; },
  };
}

/**
 * `it` as root; elsewhere a test that fails saying why. For executions that drop privileges:
 * setpriv (the fake's setuser) can switch to nobody only from root, as /sbin/setuser in Poseidon's
 * images does. CI runs as root.
 */
export const asRoot = (name: string, body: () => Promise<void>, timeout?: number): void => {
  if (process.getuid?.() === 0) {
    it(name, body, timeout);
    return;
  }
  it(name, () => {
    throw new Error('needs root: dropping to an unprivileged user (setpriv) is possible only from root');
  });
};
