/**
 * What a runner is isolated from, measured on a real Nomad 1.1.2 with `warden serve`'s defaults
 * (raw_exec, setpriv to nobody), so that what serve --help and the README say stays true. A Nomad
 * agent of this suite's own, started with variables in its environment (as an operator's agent has
 * AWS_* and the like), which raw_exec tasks inherit.
 *
 * raw_exec, measured: executions see the host's filesystem, processes and network (the Nomad API on
 * loopback included, whatever networkAccess says); privileged is root; the agent's variables reach the
 * task but not Warden's executions; the file routes write as root only within the working directory.
 * exec with Nomad's default client configuration refuses the root task Warden asks for.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync, statSync } from 'node:fs';
import { NomadClient } from '../../src/nomad/client.js';
import { checkEnvironmentSpec, runnerJob } from '../../src/runners/poseidonFormat.js';
import { startNomad, type Agent } from './support/agents.js';
import { liveAgents, waitFor } from './support/live.js';
import { PoseidonClient, startServeProcess, type ServeProcess } from './support/serveProcess.js';

const AGENT_ENV = { AWS_PROFILE: 'the-agents-profile', WARDEN_AGENT_SECRET: 's3cret' };
const ENVIRONMENT = 7;

let agent: Agent;
let serve: ServeProcess;
let p: PoseidonClient;
let nomad: NomadClient;
const mark = `warden-isolation-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  agent = await startNomad({ binary: liveAgents().nomadBinary, env: AGENT_ENV });
  nomad = new NomadClient({ address: agent.address });
  serve = await startServeProcess([], { NOMAD_ADDR: agent.address });
  p = new PoseidonClient(serve.api);
  await p.environment(ENVIRONMENT, 2);
}, 180_000);

afterAll(async () => {
  await p?.call('DELETE', `/execution-environments/${ENVIRONMENT}`).catch(() => undefined);
  await serve?.kill('SIGTERM');
  await nomad?.close();
  await agent?.stop();
  rmSync(`/tmp/${mark}`, { recursive: true, force: true });
}, 120_000);

const run = async (id: string, command: string, privilegedExecution = false): Promise<string> => {
  const ran = await p.run(id, { command, privilegedExecution, timeLimit: 20 });
  return ran.stdout.replaceAll('\r\n', '\n') + ran.stderr;
};

describe('raw_exec (the default without Docker)', () => {
  let a: string;
  let b: string;
  beforeAll(async () => {
    a = await p.runner(ENVIRONMENT);
    b = await p.runner(ENVIRONMENT);
  });

  it('users: privileged executions are root, unprivileged ones nobody', async () => {
    expect(await run(a, 'id -u', true)).toBe('0\n');
    expect(await run(a, 'id -u')).toBe('65534\n');
  });

  it("the agent's environment reaches the runner's task, not Warden's executions", async () => {
    // The task itself (`sleep infinity`) inherited the agent's variables.
    // (Poseidon's API refuses a command with `'`: double quotes throughout.)
    const task = await run(a, `for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$f" | grep -qx "NOMAD_JOB_ID=${a}" && tr "\\0" "\\n" < "$f" | grep "^AWS_PROFILE="; done 2>/dev/null`, true);
    expect(task).toContain('AWS_PROFILE=the-agents-profile');
    for (const privileged of [true, false]) {
      const env = await run(a, 'env', privileged);
      expect(env).not.toMatch(/AWS_PROFILE|WARDEN_AGENT_SECRET|NOMAD_/);
      expect(env).toMatch(/^PATH=/m);
    }
  });

  it("the host's filesystem: an unprivileged execution writes the host's /tmp; privileged ones read another runner's files", async () => {
    expect(await run(a, `mkdir -p /tmp/${mark} && touch /tmp/${mark}/from-a && echo done`)).toBe('done\n');
    expect(statSync(`/tmp/${mark}/from-a`).uid).toBe(65534);
    expect((await p.copy(b, { 'secret.txt': 'b only' })).status).toBe(204);
    const workdirOfB = (await run(b, 'pwd', true)).trim();
    expect(await run(a, `cat ${workdirOfB}/secret.txt`, true)).toBe('b only');
    // Unprivileged, only the Nomad data dir's mode stands between them (0700 on this agent, as Nomad makes it).
    expect(await run(a, `cat ${workdirOfB}/secret.txt`)).toContain('Permission denied');
  });

  it("the host's processes: an unprivileged execution sees the Nomad agent's", async () => {
    expect(await run(a, `test -d /proc/${agent.pid} && tr "\\0" " " < /proc/${agent.pid}/cmdline`)).toMatch(/nomad agent -dev/);
  });

  it("the host's network: an unprivileged execution without networkAccess reaches the Nomad API on loopback", async () => {
    const port = new URL(agent.address).port;
    const answer = await run(a, `exec 3<>/dev/tcp/127.0.0.1/${port} && printf "GET /v1/status/leader HTTP/1.0\\r\\n\\r\\n" >&3 && head -n 1 <&3`);
    expect(answer).toMatch(/^HTTP\/1\.0 200 OK/);
  });

  it('the file routes: root within the working directory, the unprivileged user beyond it', async () => {
    expect((await p.copy(a, { 'mine.txt': 'x', [`/tmp/${mark}/patched.txt`]: 'y' })).status).toBe(204);
    expect(statSync(`/tmp/${mark}/patched.txt`).uid).toBe(65534);
    const listed = (await p.call('GET', `/runners/${a}/files?path=mine.txt`)).json as { files: { owner: string }[] };
    expect(listed.files[0]?.owner).toBe('root');
    const refused = await p.copy(a, { [`/etc/${mark}`]: 'z' });
    expect(refused.status).toBe(500);
    expect((refused.json as { message: string }).message).toContain('Permission denied');
    expect(existsSync(`/etc/${mark}`)).toBe(false);
  });
});

describe('exec', () => {
  it("with Nomad's default client configuration, the root task Warden asks for is refused, in Nomad's words", async () => {
    const id = `${ENVIRONMENT + 1}-${randomBytes(8).toString('hex')}`;
    await nomad.registerJob(runnerJob(checkEnvironmentSpec({ id: ENVIRONMENT + 1, prewarmingPoolSize: 1, driver: 'exec' }), id));
    const allocations = await waitFor(
      'the exec runner refused',
      (index, waitMs) => nomad.jobAllocations(id, { index, waitMs }),
      (list) => list.some((a) => Object.values(a.TaskStates ?? {}).some((task) => (task.Events ?? []).some((event) => /running as user "root" is disallowed/.test(event.DisplayMessage ?? '')))),
    );
    expect(allocations.length).toBeGreaterThan(0);
    await nomad.deregisterJob(id, { purge: true });
  });
});
