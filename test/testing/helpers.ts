import { join } from 'node:path';
import { request } from 'undici';

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
