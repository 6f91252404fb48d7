import { BoundedHistory } from '../../src/supervisor/boundedHistory.js';
import { DeploymentWatch } from '../../src/supervisor/deploymentWatch.js';
import { structuredLogger, type LogFields } from '../../src/supervisor/logger.js';
import { resolveScope } from '../../src/supervisor/scope.js';
import { registerAddressCredentials } from '../../src/secrets.js';
import type { Deployment } from '../../src/nomad/types.js';
import { evaluationOutcome } from '../../machines/evaluationOutcome.js';

function deployment(status: Deployment['Status'], modifyIndex: number, desired = 2): Deployment {
  return {
    ID: 'd1',
    Namespace: 'default',
    JobID: 'web',
    JobVersion: 3,
    JobModifyIndex: 10,
    JobCreateIndex: 5,
    TaskGroups: {
      app: {
        AutoRevert: false,
        AutoPromote: false,
        ProgressDeadline: 0,
        RequireProgressBy: null,
        Promoted: false,
        PlacedCanaries: null,
        DesiredCanaries: 0,
        DesiredTotal: desired,
        PlacedAllocs: 0,
        HealthyAllocs: 0,
        UnhealthyAllocs: 0,
      },
    },
    Status: status,
    StatusDescription: status === 'failed' ? 'Failed due to progress deadline' : 'Deployment is running',
    CreateIndex: 11,
    ModifyIndex: modifyIndex,
  };
}

describe('DeploymentWatch', () => {
  test('succeeds once every allocation the deployment wants is judged healthy, counting verdicts that came first', () => {
    const watch = new DeploymentWatch('web', 'default', 3);
    expect(watch.onVerdict('a1', 'd1', 'web.app[0]', { healthy: true, at: 1, reasons: {} })).toBeUndefined();
    expect(watch.onDeployment(deployment('running', 12))).toBeUndefined();
    expect(watch.onVerdict('a0', 'old', 'web.app[0]', { healthy: true, at: 1, reasons: {} })).toBeUndefined();
    expect(watch.onVerdict('a2', 'd1', 'web.app[1]', { healthy: true, at: 2, reasons: {} })).toMatchObject({
      ok: true,
      deploymentId: 'd1',
      healthy: ['a1', 'a2'],
    });
  });

  test('fails at the first unhealthy allocation of the deployment, with its reasons', () => {
    const watch = new DeploymentWatch('web', 'default', 3);
    watch.onDeployment(deployment('running', 12));
    const result = watch.onVerdict('a1', 'd1', 'web.app[0]', { healthy: false, at: 5, reasons: { main: 'Unhealthy because of failed task' } });
    expect(result).toMatchObject({
      ok: false,
      reason: '1 allocation unhealthy',
      unhealthy: [{ allocId: 'a1', name: 'web.app[0]', reasons: { main: 'Unhealthy because of failed task' } }],
    });
    // Settled: later news changes nothing.
    expect(watch.onVerdict('a2', 'd1', 'web.app[1]', { healthy: true, at: 6, reasons: {} })).toBe(result);
  });

  test('ignores other jobs, versions, stale deployment updates and stopped allocations; fails when Nomad ends the deployment', () => {
    const watch = new DeploymentWatch('web', 'default', 3);
    expect(watch.onDeployment({ ...deployment('failed', 20), JobVersion: 2 })).toBeUndefined();
    expect(watch.onDeployment({ ...deployment('failed', 20), JobID: 'other' })).toBeUndefined();
    watch.onDeployment(deployment('running', 12));
    expect(watch.onVerdict('a1', 'd1', undefined, { stopped: true, at: 3 })).toBeUndefined();
    expect(watch.onDeployment(deployment('running', 11))).toBeUndefined();
    expect(watch.onDeployment(deployment('failed', 20))).toMatchObject({
      ok: false,
      reason: 'Deployment failed: Failed due to progress deadline',
    });
  });

  test('a placement failure of an evaluation within the deployment fails it with the evaluation outcome', () => {
    const watch = new DeploymentWatch('web', 'default', 3);
    watch.onDeployment(deployment('running', 12));
    const outcome = evaluationOutcome(
      { ID: 'e1', Status: 'complete', FailedTGAllocs: { app: { NodesEvaluated: 1, NodesExhausted: 1, DimensionExhausted: { memory: 1 } } } },
      ['e1'],
    );
    expect(watch.onEvaluation(outcome, 'other')).toBeUndefined();
    expect(watch.onEvaluation(outcome, 'd1')).toMatchObject({
      ok: false,
      reason: 'could not place task group "app"',
      evaluation: { failures: [{ group: 'app' }] },
    });
  });
});

describe('scope', () => {
  test('defaults to the default namespace and every job', () => {
    const scope = resolveScope();
    expect(scope.includes('default', 'x')).toBe(true);
    expect(scope.includes(undefined, 'x')).toBe(true);
    expect(scope.includes('prod', 'x')).toBe(false);
  });

  test('namespaces and job prefixes both restrict; "*" means every namespace', () => {
    const scope = resolveScope({ namespaces: ['*'], jobPrefixes: ['runner-', 'web'] });
    expect(scope.includes('prod', 'runner-7')).toBe(true);
    expect(scope.includes('prod', 'webapp')).toBe(true);
    expect(scope.includes('prod', 'batch')).toBe(false);
    expect(resolveScope({ namespaces: ['a', 'b'] }).includes('b', 'j')).toBe(true);
  });
});

describe('BoundedHistory', () => {
  test('keeps the last entries, refreshed on write', () => {
    const history = new BoundedHistory<number>(2);
    history.set('a', 1);
    history.set('b', 2);
    history.set('a', 3);
    history.set('c', 4);
    expect(history.get('b')).toBeUndefined();
    expect([...history.values()]).toEqual([3, 4]);
    expect(() => new BoundedHistory(0)).toThrow(RangeError);
  });
});

describe('structuredLogger', () => {
  test('removes the token from messages and nested fields', () => {
    const records: [LogFields, string][] = [];
    const sink = { debug: () => undefined, info: () => undefined, error: () => undefined, warn: (f: LogFields, m: string) => records.push([f, m]) };
    const logger = structuredLogger(sink, ['s3cr3t-token']);
    logger.warn('request with s3cr3t-token failed', { error: new Error('x-nomad-token: s3cr3t-token'), nested: { list: ['s3cr3t-token'] } });
    logger.warn({ token: 's3cr3t-token' }, 'pino order, s3cr3t-token');
    expect(JSON.stringify(records)).not.toContain('s3cr3t-token');
    expect(records[0]![1]).toBe('request with [redacted] failed');
    expect(records[1]).toEqual([{ token: '[redacted]' }, 'pino order, [redacted]']);
    // Given none, it still removes what a connection registered (src/secrets.ts): a password of an address.
    registerAddressCredentials('https://ops:pa55-w0rd@nomad.example:4646');
    structuredLogger(sink, [undefined, '']).warn('proxy said: bad credentials ops:pa55-w0rd');
    expect(records[2]![1]).toBe('proxy said: bad credentials [redacted]');
  });

  test('hands the sink fields first, whichever order the call used', () => {
    const records: unknown[][] = [];
    const record = (...args: unknown[]): number => records.push(args);
    const logger = structuredLogger({ debug: record, info: record, warn: record, error: record });
    logger.info('message first', { a: 1 });
    logger.info({ b: 2 }, 'fields first');
    logger.info('message alone');
    expect(records).toEqual([[{ a: 1 }, 'message first'], [{ b: 2 }, 'fields first'], [{}, 'message alone']]);
    expect(structuredLogger(logger)).toBe(logger);
  });
});
