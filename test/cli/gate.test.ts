/**
 * `warden gate` against FakeNomad over loopback on a VirtualClock: the recorded deployments
 * replay while the gate waits, with Nomad's own verdicts stripped.
 */
import { createServer } from 'node:net';
import { gate, GATE_AWAITING_PROMOTION, GATE_HEALTHY, GATE_UNHEALTHY, GATE_UNREACHABLE, type GateOptions } from '../../src/cli/gateCommand.js';
import { EXIT_USAGE } from '../../src/cli/exitCodes.js';
import { buildProgram, main } from '../../src/cli/main.js';
import { VirtualClock } from '../../src/clock/index.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { driveTo, flush, loadScenario, requestedIndex, splitAfterRegistration, stripNomadVerdict } from '../supervisor/support/harness.js';
import { serviceJob } from '../testing/helpers.js';

async function gateDuring(name: string, options: GateOptions = {}, jobId?: string) {
  const scenario = loadScenario(name);
  const [before, after] = splitAfterRegistration(scenario.stream);
  const clock = new VirtualClock({ start: scenario.opened + before.at(-1)!.t });
  const fake = await FakeNomad.start({ clock });
  fake.replay(before, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario), immediate: true });
  const lines: string[] = [];
  let exitCode: number | undefined;
  let at: number | undefined;
  const running = gate(jobId ?? scenario.meta.job_id, options, { env: { NOMAD_ADDR: fake.address }, write: (l) => lines.push(l), clock, transport: { gzip: false } }).then(
    (code) => {
      at ??= clock.now();
      exitCode = code;
    },
  );
  await flush();
  fake.replay(after, { transform: stripNomadVerdict });
  for (let t = clock.now(); exitCode === undefined && t < scenario.closed + 60_000; t += 1_000) await driveTo(clock, t);
  await running;
  await fake.close();
  return { exitCode, lines, at };
}

/** The gate on a scripted cluster: job `web` (2 allocations, the given update block), then `script` once the gate waits. */
async function gateOnCluster(update: Record<string, unknown>, script: (cluster: FakeNomad['cluster']) => void) {
  const clock = new VirtualClock({ start: Date.UTC(2026, 10, 29, 18) });
  const fake = await FakeNomad.start({ clock });
  const job = serviceJob('web');
  fake.cluster.registerJob({ ...job, Update: { ...(job.Update as object), ...update } });
  const lines: string[] = [];
  let exitCode: number | undefined;
  const running = gate('web', {}, { env: { NOMAD_ADDR: fake.address }, write: (l) => lines.push(l), clock, transport: { gzip: false } }).then(
    (code) => (exitCode = code),
  );
  await driveTo(clock, clock.now() + 500);
  script(fake.cluster);
  const end = clock.now() + 60_000;
  for (let t = clock.now(); exitCode === undefined && t < end; t += 1_000) await driveTo(clock, t);
  await running;
  const deploymentId = fake.cluster.listDeployments({ jobId: 'web' })[0]?.ID;
  await fake.close();
  return { exitCode, lines, deploymentId };
}

describe('warden gate', () => {
  test('a healthy deployment: exit 0', async () => {
    const { exitCode, lines } = await gateDuring('healthy_task_states');
    expect(exitCode).toBe(GATE_HEALTHY);
    expect(lines).toEqual(['✔ healthy-task-states version 0: deployment healthy, 2 allocation(s) healthy']);
  });

  test('a failing deployment: exit 1 when Nomad fails it, in Nomad\'s words, with each unhealthy allocation and its per-task reason', async () => {
    const { exitCode, lines, at } = await gateDuring('failed_task');
    expect(exitCode).toBe(GATE_UNHEALTHY);
    expect(lines[0]).toBe('✘ failed-task version 0: Deployment failed: Failed due to progress deadline; 1 allocation unhealthy');
    expect(lines[1]).toMatch(/^ {2}failed-task\.app\[0\] [0-9a-f-]{36}$/);
    expect(lines.slice(2)).toEqual(['    main: Unhealthy because of failed task']);
    // The recording's DeploymentStatusUpdate, 30 s into the stream.
    expect(at! - loadScenario('failed_task').opened).toBe(30_022);
  });

  test('--fail-fast: exit 1 at the first unhealthy allocation, saying so', async () => {
    const { exitCode, lines, at } = await gateDuring('failed_task', { failFast: true });
    expect(exitCode).toBe(GATE_UNHEALTHY);
    expect(lines[0]).toBe('✘ failed-task version 0: 1 allocation unhealthy');
    expect(lines.slice(2)).toEqual(['    main: Unhealthy because of failed task', '  --fail-fast: the first unhealthy allocation ends the gate']);
    // The task failed ≈0.2 s into the stream; the deadline was 30 s away.
    expect(at! - loadScenario('failed_task').opened).toBeLessThan(2_000);
  });

  test('canaries healthy and waiting for a manual promotion: exit 3 with the command that promotes them', async () => {
    const { exitCode, lines, deploymentId } = await gateOnCluster({ Canary: 1 }, (cluster) => {
      const [canary] = cluster.placeAllocations('web', { count: 1, canary: true });
      cluster.startTask(canary!.ID);
      // Nomad's client reports it healthy: the deployment counts it.
      cluster.setDeploymentAllocHealth(canary!.DeploymentID!, [canary!.ID], []);
    });
    expect(exitCode).toBe(GATE_AWAITING_PROMOTION);
    expect(lines).toEqual([`⏸ web version 0: 1 canary allocation(s) healthy, awaiting promotion (nomad deployment promote ${deploymentId})`]);
  });

  test('progress_deadline = 0: exit 1 when Nomad fails it for the unhealthy allocation, naming Nomad\'s rule', async () => {
    const { exitCode, lines } = await gateOnCluster({ ProgressDeadline: 0 }, (cluster) => {
      const [first] = cluster.placeAllocations('web');
      cluster.failTask(first!.ID, 'main', { exitCode: 1 });
      cluster.setDeploymentStatus(first!.DeploymentID!, 'failed', 'Failed due to unhealthy allocations');
    });
    expect(exitCode).toBe(GATE_UNHEALTHY);
    expect(lines[0]).toBe('✘ web version 0: Deployment failed: Failed due to unhealthy allocations; 1 allocation unhealthy');
    expect(lines.at(-1)).toBe('    main: Unhealthy because of failed task');
  });

  test('a placement failure with --fail-fast: exit 1 at once, naming the group and the exhausted dimension', async () => {
    const { exitCode, lines } = await gateDuring('placement_failure', { failFast: true });
    expect(exitCode).toBe(GATE_UNHEALTHY);
    const text = lines.join('\n');
    expect(lines[0]).toBe('✘ placement-failure version 0: could not place task group "app"');
    expect(text).toContain('failed to place all allocations');
    expect(text).toContain('Task Group "app" (failed to place 1 allocation)');
    expect(text).toContain('Dimension "memory" exhausted on 1 nodes');
    expect(text).toMatch(/Evaluation "[0-9a-f-]{36}" waiting for additional capacity to place remainder/);
  });

  test('a placement failure: Nomad keeps the deployment running (capacity may come) until the job is stopped; exit 1 then', async () => {
    const { exitCode, lines } = await gateDuring('placement_failure');
    expect(exitCode).toBe(GATE_UNHEALTHY);
    expect(lines).toEqual(['✘ placement-failure version 0: Deployment cancelled: Cancelled because job is stopped']);
  });

  test('the second version of a rolling update, as JSON', async () => {
    const { exitCode, lines } = await gateDuring('rolling_update', { version: 1, json: true });
    expect(exitCode).toBe(GATE_HEALTHY);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ type: 'deployment', ok: true, jobId: 'rolling-update', version: 1 });
    expect((JSON.parse(lines[0]!) as { healthy: string[] }).healthy).toHaveLength(3);
  });

  test('a job Nomad does not know: exit 1 with Nomad\'s answer', async () => {
    const { exitCode, lines } = await gateDuring('healthy_task_states', {}, 'no-such-job');
    expect(exitCode).toBe(GATE_UNHEALTHY);
    expect(lines.join('\n')).toContain('job not found');
  });

  test('no verdict within --timeout: exit 1', async () => {
    // min_healthy_time is 2 s: nothing can be healthy within 1 s.
    const { exitCode, lines } = await gateDuring('healthy_task_states', { timeout: 1 });
    expect(exitCode).toBe(GATE_UNHEALTHY);
    expect(lines).toEqual(['✘ healthy-task-states version 0: no verdict within 1s: deployment 249e20df still running: Deployment is running']);
  });

  test('batch_job: nothing to judge, exit 1 at once with the reason', async () => {
    const { exitCode, lines } = await gateDuring('batch_job');
    expect(exitCode).toBe(GATE_UNHEALTHY);
    expect(lines).toEqual(['✘ batch-job version 0: no deployment to judge: Nomad runs no deployments for batch jobs']);
  });

  test('manual_health: no one set the health, Nomad failed it at the progress deadline; Warden says why it judged none', async () => {
    const { exitCode, lines } = await gateDuring('manual_health');
    expect(exitCode).toBe(GATE_UNHEALTHY);
    expect(lines).toEqual(['✘ manual-health version 0: Deployment failed: Failed due to progress deadline', '  1 allocation(s) not judged by Warden: group app sets health manually']);
  });

  test('Nomad unreachable: exit 2, and the token never printed', async () => {
    // A port that was just free and is closed again: connection refused.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const lines: string[] = [];
    const code = await gate('web', {}, {
      env: { NOMAD_ADDR: `http://127.0.0.1:${port}`, NOMAD_TOKEN: 'secret-token-123' },
      write: (l) => lines.push(l),
      clock: new VirtualClock(),
      transport: { gzip: false },
    });
    expect(code).toBe(GATE_UNREACHABLE);
    expect(lines[0]).toContain(`Nomad at http://127.0.0.1:${port} could not be reached`);
    expect(lines.join('\n')).not.toContain('secret-token-123');
  });
});

describe('the command line: --version after gate is the job version, before any command the program\'s', () => {
  /** The gate options commander hands the gate for `args` (its action replaced), or the exit code and output when commander ends it. */
  async function parsed(...args: string[]): Promise<{ code: number | undefined; written: string; job?: string; options?: Record<string, unknown> }> {
    const argv = ['node', 'warden', ...args];
    const program = buildProgram('9.9.9', argv);
    let job: string | undefined;
    let options: Record<string, unknown> | undefined;
    program.commands.find((command) => command.name() === 'gate')?.action((id: string, opts: Record<string, unknown>) => {
      job = id;
      options = opts;
    });
    const written: string[] = [];
    const out = jest.spyOn(process.stdout, 'write').mockImplementation((text) => written.push(String(text)) > 0);
    const err = jest.spyOn(process.stderr, 'write').mockImplementation((text) => written.push(String(text)) > 0);
    try {
      return { code: await main(argv, program), written: written.join(''), ...(job === undefined ? {} : { job }), ...(options === undefined ? {} : { options }) };
    } finally {
      out.mockRestore();
      err.mockRestore();
    }
  }

  test('warden gate web --version 1 gates version 1 (it printed the program\'s version and exited 0, which CI read as healthy)', async () => {
    for (const args of [['gate', 'web', '--version', '1'], ['gate', '--version', '1', 'web'], ['gate', 'web', '--version=1'], ['--log-level', 'warn', 'gate', 'web', '--version', '1']]) {
      expect({ args, ...(await parsed(...args)) }).toEqual({ args, code: undefined, written: '', job: 'web', options: { version: 1 } });
    }
  });

  test('the program\'s own --version still prints it; a gate --version without a number is a usage error, never 0', async () => {
    expect(await parsed('--version')).toEqual({ code: 0, written: '9.9.9\n' });
    expect(await parsed('-V')).toEqual({ code: 0, written: '9.9.9\n' });
    const bare = await parsed('gate', 'web', '--version');
    expect(bare.code).toBe(EXIT_USAGE);
    expect(bare.written).toContain("option '--version <n>' argument missing");
    expect((await parsed('watch', '--version')).code).toBe(EXIT_USAGE);
  });
});
