/**
 * A FakeNomad acting as a cluster in a process of its own (bench/pools-server.ts), as a real Nomad
 * is: a benchmark then measures Warden, not the fake it talks to, and can ask how much CPU the fake
 * itself used (to show it was not the limit).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export interface FakeNomadProcess {
  address: string;
  /** CPU time the fake's process has used so far, ms. */
  cpuMs(): Promise<number>;
}

/** Runs `work` against the fake; `exec`: commands run as real processes (runner executions). */
export async function withFakeNomadProcess<T>(work: (address: string, fake: FakeNomadProcess) => Promise<T>, options: { exec?: boolean } = {}): Promise<T> {
  // Profiled with the benchmark: `node --cpu-prof --cpu-prof-dir=… --import tsx bench/….ts` profiles the fake too.
  const profiling = process.execArgv.filter((arg, i, all) => /^--(cpu|heap)-prof/.test(arg) || /^--(cpu|heap)-prof-\w+$/.test(all[i - 1] ?? ''));
  const args = [...profiling, '--import', 'tsx', join(import.meta.dirname, '..', 'pools-server.ts'), ...(options.exec === true ? ['--exec'] : [])];
  const server = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: server.stdout })[Symbol.asyncIterator]();
  const address = String((await lines.next()).value);
  // One question at a time: each `cpu` line is answered by one line.
  let asked = Promise.resolve(0);
  const fake: FakeNomadProcess = {
    address,
    cpuMs: () => {
      asked = asked.then(async () => {
        server.stdin.write('cpu\n');
        return Number((await lines.next()).value);
      });
      return asked;
    },
  };
  try {
    return await work(address, fake);
  } finally {
    server.stdin.end();
    await new Promise((resolve) => server.on('exit', resolve));
  }
}
