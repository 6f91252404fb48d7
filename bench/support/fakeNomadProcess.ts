/**
 * A FakeNomad acting as a cluster in a process of its own (bench/pools-server.ts), as a real Nomad
 * is: a benchmark then measures Warden, not the fake it talks to.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** Runs `work` against the fake's address; `exec`: commands run as real processes (runner executions). */
export async function withFakeNomadProcess<T>(work: (address: string) => Promise<T>, options: { exec?: boolean } = {}): Promise<T> {
  const args = ['--import', 'tsx', join(import.meta.dirname, '..', 'pools-server.ts'), ...(options.exec === true ? ['--exec'] : [])];
  const server = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: server.stdout })[Symbol.asyncIterator]();
  const address = String((await lines.next()).value);
  try {
    return await work(address);
  } finally {
    server.stdin.end();
    await new Promise((resolve) => server.on('exit', resolve));
  }
}
