/** `warden serve`'s command line: its exit codes and what it prints when it cannot start. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Job } from '../../src/nomad/types.js';
import { createCliLogger } from '../../src/cli/logging.js';
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

test('Nomad unreachable at the start: served, /health says why, tried again until SIGTERM (exit 0), as Poseidon keeps trying', async () => {
  const clock = new VirtualClock({ start: START });
  const lines: string[] = [];
  const logs: string[] = [];
  const stop = new AbortController();
  const running = serve(
    { listen: { host: '127.0.0.1', port: 0 } },
    {
      env: { NOMAD_ADDR: 'http://127.0.0.1:1' }, write: (l) => lines.push(l), error: (l) => lines.push(l), clock, transport: { gzip: false }, signal: stop.signal,
      logger: createCliLogger({ format: 'json', level: 'info', clock, write: (line) => logs.push(line) }),
    },
  );
  let code: number | undefined;
  void running.then((value) => (code = value));
  for (let i = 0; i < 200 && !lines.some((line) => line.includes('/api/v1')); i++) await settle(5);
  const base = /(http:\/\/127\.0\.0\.1:\d+\/api\/v1)/.exec(lines.join('\n'))?.[1];
  expect(base).toBeDefined();
  for (let i = 0; i < 400 && !logs.some((line) => line.includes('retrying in 2 s')); i++) {
    await settle(5);
    clock.advance(250);
  }
  expect(logs.join('\n')).toMatch(/the runner pools could not be read from the cluster: .*retrying in 1 s \(attempt 1\)/);
  const health = await fetch(`${base}/health`);
  expect(health.status).toBe(503);
  expect(await health.json()).toEqual({ message: expect.stringMatching(/^the runner pools are not recovered from Nomad yet: .*127\.0\.0\.1:1/), errorCode: 'NOMAD_UNREACHABLE' });
  expect(code).toBeUndefined();
  stop.abort();
  expect(await run(running, clock)).toBe(0);
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

describe("Poseidon's template job file, network and force-pull options", () => {
  const dir = mkdtempSync(join(tmpdir(), 'warden-template-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const runnerGroup = (job: Job) => job.TaskGroups!.find((group) => group.Name === 'default-group')!;

  it('a JSON template job: kept where an environment says nothing; its driver the default; network mode and DNS; no force pulls', async () => {
    const file = join(dir, 'template.json');
    const custom: Job = {
      ID: 'template-0', Type: 'batch', Datacenters: ['dc1'],
      TaskGroups: [{
        Name: 'default-group', Count: 1,
        Constraints: [{ LTarget: '${attr.kernel.name}', RTarget: 'linux', Operand: '=' }],
        RestartPolicy: { Attempts: 1, Delay: 5_000_000_000, Interval: 60_000_000_000, Mode: 'fail' },
        Tasks: [{ Name: 'default-task', Driver: 'docker', Env: { LANG: 'C.UTF-8' }, Config: { image: 'ignored', cap_drop: ['ALL'] }, Resources: { CPU: 10, MemoryMB: 64 } }],
      }],
    };
    writeFileSync(file, JSON.stringify({ Job: custom }));
    const h = await startServe({ templateJobFile: file, networkMode: 'cni/secure-bridge', networkDnsServers: ['10.0.0.53'], disableForcePull: true });
    try {
      expect(h.lines.join('\n')).toContain("runners' driver: docker");
      await h.environment(9, 1, { image: 'python:3.12', networkAccess: true, exposedPorts: [8080] });
      const template = (await h.nomad.getJob('template-9')).body;
      const group = runnerGroup(template);
      expect(group.Constraints).toEqual([expect.objectContaining({ LTarget: '${attr.kernel.name}', RTarget: 'linux' })]);
      expect(group.RestartPolicy).toMatchObject({ Attempts: 1 });
      expect(group.Networks?.[0]).toMatchObject({ Mode: 'cni/secure-bridge', DNS: { Servers: ['10.0.0.53'] }, DynamicPorts: [expect.objectContaining({ Label: '8080', To: 8080 })] });
      expect(group.Tasks[0]).toMatchObject({ Driver: 'docker', Env: { LANG: 'C.UTF-8' }, Config: { image: 'python:3.12', cap_drop: ['ALL'], force_pull: false, network_mode: '', command: 'sleep', args: ['infinity'] } });
      expect(group.Tasks[0]!.Resources).toMatchObject({ CPU: 100, MemoryMB: 64, MemoryMaxMB: 256 });
      expect(template.TaskGroups!.find((g) => g.Name === 'config')?.Meta).toMatchObject({ prewarmingPoolSize: '1', used: 'false' });
      const { runnerId } = (await h.call('POST', '/api/v1/runners', { body: { executionEnvironmentId: 9, inactivityTimeout: 0 } })).json as { runnerId: string };
      const runner = (await h.nomad.getJob(runnerId)).body;
      expect(runnerGroup(runner).Constraints).toEqual(group.Constraints);
      expect(runnerGroup(runner).Tasks[0]!.Config).toMatchObject({ force_pull: false, image: 'python:3.12' });
      // Read back as it was written: a fetch finds nothing changed.
      expect((await h.settled(h.call('GET', '/api/v1/execution-environments?fetch=true'))).status).toBe(200);
      expect((await h.call('GET', '/api/v1/execution-environments/9')).json).toMatchObject({ image: 'python:3.12', networkAccess: true, exposedPorts: [8080] });
    } finally {
      expect(await h.stop()).toBe(0);
    }
  });

  it("Poseidon's HCL template, parsed by Nomad: what it sets is kept", async () => {
    const file = join(dir, 'template.hcl');
    writeFileSync(file, POSEIDON_TEMPLATE.replace('attempts = 3\n      delay = "15s"', 'attempts = 5\n      delay = "15s"'));
    const h = await startServe({ templateJobFile: file });
    try {
      await h.environment(10, 1, { image: 'python:3.12' });
      const group = runnerGroup((await h.nomad.getJob('template-10')).body);
      expect(group.RestartPolicy).toMatchObject({ Attempts: 5 });
      expect(group.Tasks[0]).toMatchObject({ Driver: 'docker', Config: { image: 'python:3.12', force_pull: true, network_mode: 'none' } });
    } finally {
      expect(await h.stop()).toBe(0);
    }
  });

  it('a template job file that cannot be a job: exit 64 saying why', async () => {
    const clock = new VirtualClock({ start: START });
    const errors: string[] = [];
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"Job": {"ID": "x"}}');
    for (const [path, message] of [[join(dir, 'missing.hcl'), /template job file .*missing\.hcl: ENOENT/], [bad, /not a job \(no TaskGroups\)/]] as const) {
      errors.length = 0;
      const code = await run(serve({ dev: true, listen: { host: '127.0.0.1', port: 0 }, templateJobFile: path }, { env: {}, write: () => undefined, error: (l) => errors.push(l), clock, transport: { gzip: false } }), clock);
      expect(code).toBe(64);
      expect(errors.join('\n')).toMatch(message);
    }
  });
});

/** Poseidon's own default template job (internal/environment/template-environment-job.hcl, d6c69f2). */
const POSEIDON_TEMPLATE = `job "template-0" {
  datacenters = ["dc1"]
  type = "batch"

  group "default-group" {
    ephemeral_disk {
      migrate = false
      size    = 10
      sticky  = false
    }
    count = 1
    spread {
      attribute = "\${node.unique.name}"
      weight = 100
    }
    restart {
      attempts = 3
      delay = "15s"
      interval = "1h"
      mode = "fail"
    }
    reschedule {
      unlimited = false
      attempts = 3
      interval = "6h"
      delay = "1m"
      max_delay = "4m"
      delay_function = "exponential"
    }

    task "default-task" {
      driver = "docker"
      kill_timeout = "0s"
      kill_signal = "SIGKILL"

      config {
        image = "openhpi/docker_exec_phusion"
        command = "sleep"
        args = ["infinity"]
        network_mode = "none"
      }

      logs {
        max_files     = 1
        max_file_size = 1
      }

      resources {
        cpu    = 40
        memory = 50
      }
    }
  }

  group "config" {
    count = 0
    task "config" {
      driver = "exec"
      config {
        command = "true"
      }
      logs {
        max_files     = 1
        max_file_size = 1
      }
      resources {
        cpu    = 1
        memory = 10
      }
    }
    meta {
      used = "false"
      prewarmingPoolSize = "0"
    }
  }
}
`;
