/** `warden serve`'s command line: its exit codes and what it prints when it cannot start. */
import { createServer } from 'node:net';
import { main } from '../../src/cli/main.js';
import { serve } from '../../src/cli/serveCommand.js';
import { VirtualClock, settle } from '../../src/clock/index.js';
import { START, startServe } from './support/serveHarness.js';

async function run(promise: Promise<number>, clock: VirtualClock): Promise<number> {
  let code: number | undefined;
  void promise.then((value) => (code = value));
  for (let i = 0; i < 2_000 && code === undefined; i++) {
    await settle(5);
    clock.advance(250);
  }
  return promise;
}

test('Nomad unreachable at the start: exit 2, the reason on stderr, nothing served', async () => {
  const clock = new VirtualClock({ start: START });
  const lines: string[] = [];
  const errors: string[] = [];
  const code = await run(serve({ listen: { host: '127.0.0.1', port: 0 } }, { env: { NOMAD_ADDR: 'http://127.0.0.1:1' }, write: (l) => lines.push(l), error: (l) => errors.push(l), clock, transport: { gzip: false } }), clock);
  expect(code).toBe(2);
  expect(errors.join('\n')).toMatch(/the runner pools could not be read from the cluster/);
  expect(lines.join('\n')).not.toContain('/api/v1');
});

test('an address in use: exit 70 saying so', async () => {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const { port } = taken.address() as { port: number };
  const clock = new VirtualClock({ start: START });
  const errors: string[] = [];
  const code = await run(serve({ dev: true, listen: { host: '127.0.0.1', port } }, { env: {}, write: () => undefined, error: (l) => errors.push(l), clock, transport: { gzip: false } }), clock);
  taken.close();
  expect(code).toBe(70);
  expect(errors.join('\n')).toMatch(/EADDRINUSE/);
});

test.each([
  [['--tls-cert', 'cert.pem'], /--tls-cert and --tls-key go together/],
  [['--pool-alert-threshold', '1.5'], /expected a fraction in \[0, 1\)/],
  [['--driver', 'lxc'], /Allowed choices are docker, exec, raw_exec/],
  [['--listen', 'nowhere'], /expected \[host:\]port/],
])('usage errors: %j → 64', async (args, message) => {
  const written: string[] = [];
  const stderr = jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => Boolean(written.push(String(chunk))));
  try {
    expect(await main(['node', 'warden', 'serve', ...args])).toBe(64);
  } finally {
    stderr.mockRestore();
  }
  expect(written.join('')).toMatch(message);
});

test('--inspect serves the inspector with the pools in its snapshot', async () => {
  const h = await startServe({ inspect: 0 });
  try {
    await h.environment(5, 1);
    const url = /inspector: (http:\/\/127\.0\.0\.1:\d+)/.exec(h.lines.join('\n'))?.[1];
    expect(url).toBeDefined();
    const snapshot = (await (await fetch(`${url}/api/snapshot`)).json()) as { pools?: { environmentId?: number; id?: number }[] };
    expect(JSON.stringify(snapshot.pools)).toContain('"idle":1');
  } finally {
    await h.stop();
  }
});
