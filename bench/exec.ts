/**
 * Exec throughput and latency, `npx tsx bench/exec.ts`: 100 MB of stdout from the fake exec endpoint
 * (a real `head -c` process) read through ExecClient.exec(), beside a bare ws client that only
 * decodes the same frames, alternating in the same run; and the time to the first stdout byte of a
 * short command for both. Prints one JSON object; `throughput_ratio` = exec MB/s ÷ bare MB/s (target ≥ 0.8).
 *
 *   npx tsx bench/exec.ts [--mb 100] [--runs 5] [--ttfb-runs 30]
 */
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { systemClock } from '../src/clock/index.js';
import { ExecClient } from '../src/exec/execClient.js';
import { decodeServerFrame } from '../src/nomad/exec/frames.js';
import { execUrl } from '../src/nomad/exec/request.js';
import { attachFakeExec } from '../src/testing/fakeExec/attachFakeExec.js';
import { median, numberOption } from './support/figures.js';

const BYTES = numberOption('mb', 100) * 1_000_000;
const RUNS = numberOption('runs', 5);
const TTFB_RUNS = numberOption('ttfb-runs', 30);
const ALLOC = 'bench-alloc';
const BIG = ['head', '-c', String(BYTES), '/dev/zero'];
const SMALL = ['echo', 'x'];

async function main(): Promise<void> {
  const workdir = mkdtempSync(join(tmpdir(), 'warden-bench-exec-'));
  const server = createServer((_request, response) => response.writeHead(404).end());
  const fake = attachFakeExec(server, { clock: systemClock, lookup: (id) => (id === ALLOC ? { tasks: ['main'], workdir } : undefined) });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const config = { address: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  const client = new ExecClient(config);

  /** Runs a command through exec(); resolves with [ms to first byte, ms to the end, bytes]. */
  async function viaExec(command: string[]): Promise<[number, number, number]> {
    const start = systemClock.now();
    let first = -1;
    let bytes = 0;
    const session = client.exec(ALLOC, { task: 'main', command });
    session.stdout.on('data', (chunk: Buffer) => {
      if (first < 0) first = systemClock.now() - start;
      bytes += chunk.length;
    });
    await session.exitCode;
    return [first, systemClock.now() - start, bytes];
  }

  /** The same command with a bare websocket that sends the stdin close and decodes every frame. */
  function viaBareSocket(command: string[]): Promise<[number, number, number]> {
    const start = systemClock.now();
    let first = -1;
    let bytes = 0;
    const ws = new WebSocket(execUrl(config, { allocId: ALLOC, task: 'main', command, tty: false }), { perMessageDeflate: false });
    ws.on('open', () => ws.send('{"stdin":{"close":true}}'));
    ws.on('message', (data: Buffer) => {
      const frame = decodeServerFrame(data.toString());
      if (frame.kind === 'stdout') {
        if (first < 0) first = systemClock.now() - start;
        bytes += frame.data.length;
      }
    });
    return new Promise((resolve) => ws.on('close', () => resolve([first, systemClock.now() - start, bytes])));
  }

  const exec: number[] = [];
  const bare: number[] = [];
  await viaExec(SMALL);
  for (let run = 0; run < RUNS; run++) {
    // Alternate the order so neither side always runs on a warmer machine.
    const pair = run % 2 === 0 ? [viaExec, viaBareSocket] : [viaBareSocket, viaExec];
    for (const way of pair) {
      const [, ms, bytes] = await way(BIG);
      if (bytes !== BYTES) throw new Error(`${way.name} read ${bytes} bytes, not ${BYTES}`);
      (way === viaExec ? exec : bare).push(ms);
    }
  }
  const ttfbExec: number[] = [];
  const ttfbBare: number[] = [];
  for (let run = 0; run < TTFB_RUNS; run++) {
    ttfbExec.push((await viaExec(SMALL))[0]);
    ttfbBare.push((await viaBareSocket(SMALL))[0]);
  }

  const mbps = (ms: number): number => Math.round((BYTES / 1e6 / (ms / 1000)) * 10) / 10;
  console.log(
    JSON.stringify({
      bytes: BYTES,
      runs: RUNS,
      exec_ms: exec,
      bare_ms: bare,
      exec_median_MBps: mbps(median(exec)),
      bare_median_MBps: mbps(median(bare)),
      throughput_ratio: Math.round((median(bare) / median(exec)) * 1000) / 1000,
      ttfb_runs: TTFB_RUNS,
      ttfb_exec_median_ms: median(ttfbExec),
      ttfb_bare_median_ms: median(ttfbBare),
      ttfb_ratio: Math.round((median(ttfbBare) / Math.max(1, median(ttfbExec))) * 1000) / 1000,
    }),
  );

  await fake.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(workdir, { recursive: true, force: true });
}

await main();
