/**
 * Failures that say why (issue 20 item 2, 3): a runner that cannot be placed or started is reported
 * with Nomad's reason and the back-off, the environment's summary and an empty pool's claim name it;
 * an OOM kill as Nomad reports it ends the runner's executions with Poseidon's exact words; and the
 * stderr fifo of an execution whose client is gone within a millisecond does not stay behind.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NoIdleRunnerError, RunnerStoppedError } from '../../src/runners/errors.js';
import { startPoolHarness, type PoolHarness } from './support/poolHarness.js';

async function putEnvironment(h: PoolHarness, id: number, size = 1): Promise<void> {
  await h.settled(h.pools.putEnvironment({ id, prewarmingPoolSize: size, driver: 'raw_exec' }));
}

function claimError(h: PoolHarness, id: number): NoIdleRunnerError {
  try {
    h.pools.claim(id);
  } catch (error) {
    if (error instanceof NoIdleRunnerError) return error;
    throw error;
  }
  throw new Error('the claim succeeded');
}

describe('runners that cannot be placed or started say why', () => {
  jest.setTimeout(60_000);

  it('a placement failure: reported with the placement metrics and the back-off, named by the summary and the claim', async () => {
    const h = await startPoolHarness({ pools: { backoff: { initialMs: 2_000 } } });
    try {
      h.fake.acting!.failPlacements({ jobId: /^41-/, times: Infinity });
      await putEnvironment(h, 41);
      await h.driveUntil(() => h.problems.filter((p) => p.kind === 'runner-failed').length >= 3, 60_000);
      const failed = h.problems.filter((p) => p.kind === 'runner-failed');
      expect(failed[0]).toMatchObject({ environmentId: 41 });
      expect(failed.map((p) => /trying again in (\d+) s$/.exec(p.message)?.[1])).toEqual(['2', '4', '8']);
      // The evaluation's FailedTGAllocs in the CLI's words, on one line.
      expect(failed[0]!.message).toMatch(/^environment 41: runner 41-[0-9a-f-]+: job 41-[0-9a-f-]+: .*Task Group "default-group" \(failed to place 1 allocation\).*Resources exhausted on 1 nodes.*Dimension "memory" exhausted on 1 nodes/);
      expect(failed[0]!.message).not.toContain('\n');
      const summary = h.pools.environmentSummary(41)!;
      expect(summary.failure).toMatch(/Dimension "memory" exhausted/);
      const error = claimError(h, 41);
      expect(error.reason).toBe(summary.failure);
      expect(error.message).toMatch(/^no runners available for execution environment 41: runner 41-.*exhausted/);

      // Room again: the pool fills and nothing is wrong any more.
      h.fake.acting!.clearFailures();
      await h.driveUntil(() => h.pools.environment(41)?.idleRunners === 1, 60_000);
      expect(h.pools.environmentSummary(41)!.failure).toBeNull();
    } finally {
      await h.close();
    }
  });

  it("a task that fails as it starts: its exit in Nomad's words", async () => {
    const h = await startPoolHarness();
    try {
      h.fake.acting!.failAllocations({ jobId: /^42-/, exitCode: 3, times: Infinity });
      await putEnvironment(h, 42);
      // Restarted 3 times, 15 s apart (the runner template's restart policy), then failed.
      await h.driveUntil(() => h.problems.some((p) => p.kind === 'runner-failed'), 90_000, 500);
      expect(h.problems.find((p) => p.kind === 'runner-failed')?.message).toMatch(
        /^environment 42: runner 42-[0-9a-f-]+: the allocation failed: default-task: Exit Code: 3 \(Exceeded allowed attempts 3 in interval 1h0m0s and mode is "fail"\); trying again in 1 s$/,
      );
      expect(h.pools.environmentSummary(42)!.failure).toMatch(/Exit Code: 3/);
    } finally {
      await h.close();
    }
  });

  it('a runner that does not start: its task\'s trouble while it restarts, before the allocation fails', async () => {
    const h = await startPoolHarness({ acting: { startDelayMs: 60_000 } });
    try {
      await putEnvironment(h, 43);
      const runnerId = (): string | undefined => h.pools.environment(43)?.runners[0]?.id;
      const allocation = () => h.fake.cluster.listAllocations({ jobId: runnerId() ?? '' })[0];
      await h.driveUntil(() => allocation()?.TaskStates != null);
      const allocId = String(allocation()!.ID);
      h.fake.cluster.addTaskEvents(allocId, 'default-task', [
        { Type: 'Driver Failure', DisplayMessage: 'failed to create container: API error (404): pull access denied for nope, repository does not exist', DriverError: 'failed to create container' },
        { Type: 'Restarting', DisplayMessage: 'Task restarting in 16.2s', RestartReason: 'Restart within policy' },
      ]);
      await h.driveUntil(() => h.pools.environmentSummary(43)!.failure !== null, 5_000);
      expect(h.pools.environmentSummary(43)!.failure).toBe(
        `runner ${runnerId()} does not start: default-task: Driver Failure: failed to create container: API error (404): pull access denied for nope, repository does not exist; Task restarting in 16.2s`,
      );
      expect(claimError(h, 43).message).toContain('pull access denied');
    } finally {
      await h.close();
    }
  });
});

describe('an OOM kill', () => {
  jest.setTimeout(60_000);

  it("ends the runner's executions with Poseidon's words, from the task event Nomad writes", async () => {
    const h = await startPoolHarness();
    try {
      await putEnvironment(h, 44);
      await h.driveUntil(() => h.pools.environment(44)?.idleRunners === 1);
      const runner = h.pools.claim(44, { inactivityTimeoutS: 60 });
      const execution = runner.execute({ command: 'sleep 30', privileged: true });
      await h.drive(200);
      const allocId = runner.info()!.allocationId!;
      const killed = h.fake.oomKill(allocId);
      // As the task runner writes it: Terminated with oom_killed, then Restarting (the template's policy has attempts left).
      const events = killed.TaskStates!['default-task']!.Events!.slice(-2);
      expect(events.map((e) => e.Type)).toEqual(['Terminated', 'Restarting']);
      expect(events[0]).toMatchObject({ ExitCode: 137, Message: 'OOM Killed', Details: { oom_killed: 'true', exit_code: '137', signal: '0', exit_message: 'OOM Killed' } });
      expect(killed.ClientStatus).toBe('pending');
      const outcome = await h.settled(execution.outcome);
      const error = outcome.status === 'failed' ? outcome.error : undefined;
      expect(error).toBeInstanceOf(RunnerStoppedError);
      expect((error as RunnerStoppedError).kind).toBe('oom-killed');
      expect(error?.message).toBe(`runner ${runner.id}: the allocation was OOM Killed`);
      await h.driveUntil(() => runner.state === 'destroyed' && h.pools.environment(44)?.idleRunners === 1);
      expect(h.fake.cluster.job(runner.id)).toBeUndefined();
    } finally {
      await h.close();
    }
  });
});

describe('the stderr fifo', () => {
  jest.setTimeout(90_000);

  it('is gone, with its reader, however early the client hangs up (10 executions interrupted at once)', async () => {
    const fifos = mkdtempSync(join(tmpdir(), 'warden-fifos-'));
    // Real processes on a virtual clock: a grace longer than they take to end, or a slow SIGQUIT takes the runner.
    const h = await startPoolHarness({ pools: { fifoDirectory: fifos, executionGraceS: 60 } });
    try {
      await putEnvironment(h, 45);
      await h.driveUntil(() => h.pools.environment(45)?.idleRunners === 1);
      const runner = h.pools.claim(45, { inactivityTimeoutS: 0 });
      for (let i = 0; i < 10; i++) {
        const execution = runner.execute({ command: 'echo out; echo err >&2; sleep 5', privileged: true, tty: true, stdin: 'pipe' });
        // The client is gone within the same tick (Poseidon's e2e hangs up within ~1 ms).
        if (i % 2 === 0) execution.interrupt('the client closed the connection');
        else setImmediate(() => execution.interrupt('the client closed the connection'));
        await h.settled(execution.outcome);
      }
      await h.driveUntil(() => h.fake.exec!.running.size === 0, 30_000);
      await h.drive(2_000);
      expect(readdirSync(fifos)).toEqual([]);
      expect(runner.state).toBe('used');
    } finally {
      await h.close();
      rmSync(fifos, { recursive: true, force: true });
    }
  });
});
