/**
 * DeploymentWatch alone: Nomad's deployment decides how it ended (its status, and its task groups'
 * counts for canaries awaiting promotion); Warden's verdicts give the reasons; the result waits
 * until Warden has judged the deployment's allocations; fail-fast is the gate's own choice. The
 * gates count the allocations still being judged only when it can matter.
 */
import type { Deployment, DeploymentState, Job } from '../../src/nomad/types.js';
import { DeploymentWatch } from '../../src/deployments/deploymentWatch.js';
import { DeploymentGates } from '../../src/deployments/deploymentGates.js';
import { silentLogger } from '../../src/logger.js';
import { VirtualClock } from '../../src/clock/index.js';
import { NomadConnectionError, NomadHttpError } from '../../src/nomad/errors.js';
import { nomadRulesFor } from '../../machines/nomadRules.js';

function group(fields: Partial<DeploymentState> = {}): DeploymentState {
  return {
    AutoRevert: false,
    AutoPromote: false,
    ProgressDeadline: 30e9,
    RequireProgressBy: '2026-11-29T18:00:30Z',
    Promoted: false,
    PlacedCanaries: null,
    DesiredCanaries: 0,
    DesiredTotal: 2,
    PlacedAllocs: 2,
    HealthyAllocs: 0,
    UnhealthyAllocs: 0,
    ...fields,
  };
}

function deployment(modifyIndex: number, status: Deployment['Status'], description: string, groups: Record<string, DeploymentState> = { app: group() }, fields: Partial<Deployment> = {}): Deployment {
  return {
    ID: 'd1',
    Namespace: 'default',
    JobID: 'web',
    JobVersion: 0,
    JobModifyIndex: 10,
    JobCreateIndex: 5,
    TaskGroups: groups,
    Status: status,
    StatusDescription: description,
    CreateIndex: 11,
    ModifyIndex: modifyIndex,
    ...fields,
  };
}

const failedTask = { healthy: false, at: 1_000, reasons: { main: 'Unhealthy because of failed task' } } as const;
const healthy = (at: number) => ({ healthy: true, at, reasons: {} }) as const;

describe('DeploymentWatch', () => {
  test('Nomad\'s success ends it, once the allocations are judged; the healthy ones are listed', () => {
    const watch = new DeploymentWatch('web', 'default', 0);
    watch.onVerdict('a1', 'd1', 'web.app[0]', healthy(2_000));
    watch.onDeployment(deployment(20, 'successful', 'Deployment completed successfully'));
    expect(watch.ended).toBe(true);
    // One allocation still being judged: not yet.
    expect(watch.result(1)).toBeUndefined();
    watch.onVerdict('a2', 'd1', 'web.app[1]', healthy(2_100));
    expect(watch.result(0)).toEqual({ ok: true, jobId: 'web', version: 0, deploymentId: 'd1', healthy: ['a1', 'a2'] });
  });

  test('Nomad\'s failure gives the rule and Nomad\'s words, and the unhealthy allocations with their reasons in time order', () => {
    const watch = new DeploymentWatch('web', 'default', 0);
    watch.onDeployment(deployment(12, 'running', 'Deployment is running'));
    watch.onVerdict('b', 'd1', 'web.app[1]', { ...failedTask, at: 3_000 });
    watch.onVerdict('a', 'd1', 'web.app[0]', failedTask);
    watch.onVerdict('c', 'd1', 'web.app[0]', healthy(5_000));
    expect(watch.result(0)).toBeUndefined();
    watch.onDeployment(deployment(30, 'failed', 'Failed due to progress deadline'));
    expect(watch.result(0)).toEqual({
      ok: false,
      jobId: 'web',
      version: 0,
      deploymentId: 'd1',
      rule: 'progress-deadline',
      reason: 'Deployment failed: Failed due to progress deadline; 2 allocations unhealthy',
      unhealthy: [
        { allocId: 'a', name: 'web.app[0]', at: 1_000, reasons: failedTask.reasons },
        { allocId: 'b', name: 'web.app[1]', at: 3_000, reasons: failedTask.reasons },
      ],
    });
  });

  test.each([
    ['Failed due to unhealthy allocations', 'failed', 'unhealthy-allocations'],
    ['Cancelled because job is stopped', 'cancelled', 'nomad'],
    ['Deployment marked as failed', 'failed', 'nomad'],
  ] as const)('"%s" (%s): rule %s', (description, status, rule) => {
    const watch = new DeploymentWatch('web', 'default', 0);
    watch.onDeployment(deployment(30, status, description));
    expect(watch.result(0)).toMatchObject({ ok: false, rule, reason: `Deployment ${status}: ${description}`, unhealthy: [] });
  });

  test('canaries: done when Nomad counts them all healthy and no one has promoted them; not with auto_promote', () => {
    const canaries = (healthyAllocs: number, fields: Partial<DeploymentState> = {}) => ({ app: group({ DesiredCanaries: 2, HealthyAllocs: healthyAllocs, ...fields }) });
    const watch = new DeploymentWatch('web', 'default', 0);
    watch.onDeployment(deployment(12, 'running', 'Deployment is running', canaries(1)));
    expect(watch.ended).toBe(false);
    watch.onDeployment(deployment(13, 'running', 'Deployment is running but requires manual promotion', canaries(2)));
    expect(watch.result(0)).toMatchObject({ ok: true, awaitingPromotion: true });
    const auto = new DeploymentWatch('web', 'default', 0);
    auto.onDeployment(deployment(13, 'running', 'Deployment is running pending automatic promotion', canaries(2, { AutoPromote: true })));
    expect(auto.ended).toBe(false);
  });

  test('groups mixing auto_promote and manual canaries wait for a person (deployment_watcher.go autoPromoteDeployment); a rolling group without auto_promote too, before 1.1.13 / 1.2.7 / 1.3.0', () => {
    const ended = (groups: Record<string, DeploymentState>, version: string): boolean => {
      const watch = new DeploymentWatch('web', 'default', 0, { rules: () => nomadRulesFor(version).rules });
      watch.onDeployment(deployment(13, 'running', 'Deployment is running', groups));
      return watch.ended && watch.result(0)?.ok === true && (watch.result(0) as { awaitingPromotion?: true }).awaitingPromotion === true;
    };
    const auto = group({ DesiredCanaries: 1, HealthyAllocs: 1, AutoPromote: true });
    const manual = group({ DesiredCanaries: 1, HealthyAllocs: 1 });
    const rolling = group({ DesiredCanaries: 0, HealthyAllocs: 0 });
    for (const version of ['1.1.2', '1.10.5']) expect(ended({ api: auto, web: manual }, version)).toBe(true);
    expect(ended({ api: auto, web: rolling }, '1.10.5')).toBe(false);
    expect(ended({ api: auto, web: rolling }, '1.1.2')).toBe(true);
    expect(ended({ api: auto, web: auto }, '1.1.2')).toBe(false);
    // A canary not yet healthy: nothing to promote yet.
    expect(ended({ api: auto, web: { ...manual, HealthyAllocs: 0 } }, '1.10.5')).toBe(false);
  });

  test('other jobs, versions, namespaces and stale or older deployments are ignored', () => {
    const watch = new DeploymentWatch('web', 'default', 0);
    watch.onDeployment(deployment(20, 'running', 'Deployment is running'));
    watch.onDeployment(deployment(30, 'successful', '', undefined, { JobID: 'api' }));
    watch.onDeployment(deployment(30, 'successful', '', undefined, { JobVersion: 1 }));
    watch.onDeployment(deployment(30, 'successful', '', undefined, { Namespace: 'prod' }));
    watch.onDeployment(deployment(19, 'failed', 'Failed due to progress deadline'));
    watch.onDeployment(deployment(40, 'failed', 'an older deployment of the version', undefined, { ID: 'd0', CreateIndex: 3 }));
    expect(watch.ended).toBe(false);
    // A newer deployment of the same version (registered again) takes over.
    watch.onDeployment(deployment(50, 'successful', 'Deployment completed successfully', undefined, { ID: 'd2', CreateIndex: 45 }));
    expect(watch.result(0)).toMatchObject({ ok: true, deploymentId: 'd2' });
  });

  test('fail-fast: the first unhealthy allocation of this deployment ends it at once, without waiting for the others', () => {
    const watch = new DeploymentWatch('web', 'default', 0, { failFast: true });
    watch.onVerdict('old', 'd0', 'web.app[0]', failedTask);
    watch.onDeployment(deployment(12, 'running', 'Deployment is running'));
    watch.onVerdict('stopped', 'd1', 'web.app[0]', { stopped: true, at: 900 });
    expect(watch.ended).toBe(false);
    watch.onVerdict('a', 'd1', 'web.app[0]', failedTask);
    expect(watch.result(3)).toMatchObject({ ok: false, rule: 'fail-fast', reason: '1 allocation unhealthy', unhealthy: [{ allocId: 'a' }] });
  });

  test('fail-fast: a group the scheduler cannot place ends it, with the evaluation', () => {
    const watch = new DeploymentWatch('web', 'default', 0, { failFast: true });
    watch.onDeployment(deployment(12, 'running', 'Deployment is running'));
    const evaluation = { ok: false as const, evalId: 'e1', message: 'Task Group "app" (failed to place 2 allocations)', failures: [{ group: 'app', unplaced: 2, message: '' }], blockedEvalId: 'e2' };
    watch.onEvaluation(evaluation as never, 'd1');
    expect(watch.result(2)).toMatchObject({ ok: false, rule: 'placement', reason: 'could not place task group "app"', evaluation });
    const patient = new DeploymentWatch('web', 'default', 0);
    patient.onDeployment(deployment(12, 'running', 'Deployment is running'));
    patient.onEvaluation(evaluation as never, 'd1');
    expect(patient.ended).toBe(false);
  });

  test('allocations Warden did not judge are listed with why, for the deployment they belong to', () => {
    const watch = new DeploymentWatch('web', 'default', 0);
    watch.onUnjudged('m1', 'd1', 'web.app[0]', 'group app sets health manually');
    watch.onUnjudged('other', 'd0', 'web.app[0]', 'group app sets health manually');
    watch.onDeployment(deployment(30, 'failed', 'Failed due to progress deadline'));
    expect(watch.result(0)).toMatchObject({ unjudged: [{ allocId: 'm1', name: 'web.app[0]', reason: 'group app sets health manually' }] });
  });
});

describe('DeploymentGates', () => {
  test('the allocations still being judged are counted only once the deployment has ended, once per step however many verdicts come', async () => {
    let counted = 0;
    let undecided = 1_000;
    const gates = new DeploymentGates({
      clock: new VirtualClock(),
      stillJudged: () => [],
      nomad: {
        getJob: async () => ({ body: { ID: 'web', Version: 0 } as Job, meta: { lastIndex: 1, knownLeader: true, lastContactMs: 0 } }),
        getJobVersion: async () => undefined,
        query: async () => ({ body: null, meta: { lastIndex: 1, knownLeader: true, lastContactMs: 0 } }) as never,
      },
      logger: silentLogger,
      verdicts: () => [],
      unjudged: () => [],
      undecided: () => {
        counted++;
        return undecided;
      },
      caughtUp: () => true,
    });
    const ref = (i: number) => ({ allocId: `a${i}`, name: `web.app[${i}]`, namespace: 'default', jobId: 'web', taskGroup: 'app', deploymentId: 'd1' });
    const result = gates.wait('web', 'default', {});
    await new Promise((resolve) => setImmediate(resolve));
    gates.onDeployment(deployment(12, 'running', 'Deployment is running'));
    for (let i = 0; i < 1_000; i++) gates.onVerdict({ alloc: ref(i), outcome: healthy(2_000 + i) });
    await new Promise((resolve) => setImmediate(resolve));
    expect(counted).toBe(0);
    gates.onDeployment(deployment(20, 'successful', 'Deployment completed successfully'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(counted).toBe(1);
    undecided = 0;
    for (let i = 1_000; i < 1_002; i++) gates.onVerdict({ alloc: ref(i), outcome: healthy(4_000) });
    await expect(result).resolves.toMatchObject({ ok: true, deploymentId: 'd1', healthy: expect.arrayContaining(['a0', 'a1001']) });
    expect(counted).toBe(2);
  });

  const meta = { lastIndex: 1, knownLeader: true, lastContactMs: 0 };
  /** Gates over a Nomad whose reads of the job's deployments answer as `deployments` says, one answer per read. */
  function gatesOver(clock: VirtualClock, deployments: (() => Deployment[])[], undecided: { allocId: string; state: string }[] = []) {
    let reads = 0;
    const gates = new DeploymentGates({
      clock,
      nomad: {
        getJob: async () => ({ body: { ID: 'web', Version: 0 } as Job, meta }),
        getJobVersion: async () => undefined,
        query: async () => ({ body: (deployments[Math.min(reads++, deployments.length - 1)] as () => Deployment[])(), meta }) as never,
      },
      logger: silentLogger,
      verdicts: () => [],
      unjudged: () => [],
      undecided: () => undecided.length,
      stillJudged: () => undecided,
      caughtUp: () => true,
    });
    return { gates, reads: () => reads };
  }
  const refused = (): never => {
    throw new NomadConnectionError('GET', '/v1/job/web/deployments', new Error('other side closed'));
  };

  test("a failed read of the job's deployments is retried until had: an ended deployment is known from that read alone", async () => {
    const clock = new VirtualClock();
    const { gates, reads } = gatesOver(clock, [refused, refused, () => [deployment(20, 'successful', 'Deployment completed successfully')]]);
    const result = gates.wait('web', 'default', {});
    for (let i = 0; i < 20 && reads() < 3; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      clock.advance(1_000);
    }
    expect(reads()).toBe(3);
    await expect(result).resolves.toMatchObject({ ok: true, deploymentId: 'd1' });
  });

  test('a read refused for good is not retried, and the gate says what it waits for', async () => {
    const clock = new VirtualClock();
    const forbidden = (): never => {
      throw new NomadHttpError(403, 'GET', '/v1/job/web/deployments', 'Permission denied');
    };
    const { gates, reads } = gatesOver(clock, [forbidden]);
    void gates.wait('web', 'default', {}).catch(() => undefined);
    for (let i = 0; i < 5; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      clock.advance(10_000);
    }
    expect(reads()).toBe(1);
    expect(gates.waiting()).toEqual([{ jobId: 'web', namespace: 'default', version: 0, waitingFor: expect.stringMatching(/^no deployment of version 0 seen \(reading the job's deployments: .*Permission denied/) }]);
    gates.stop();
  });

  test('what a gate still waits for: the deployment to end, then the allocations still judged', async () => {
    const clock = new VirtualClock();
    const { gates } = gatesOver(clock, [() => [deployment(12, 'running', 'Deployment is running')]], [{ allocId: 'aaaaaaaa-1', state: 'minHealthyWait' }]);
    void gates.wait('web', 'default', {}).catch(() => undefined);
    for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(gates.waiting()[0]?.waitingFor).toBe('deployment d1 still running: Deployment is running');
    gates.onDeployment(deployment(20, 'successful', 'Deployment completed successfully'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(gates.waiting()[0]?.waitingFor).toBe('deployment d1 ended successful; still judging 1 allocation: aaaaaaaa (minHealthyWait)');
    gates.stop();
  });
});
