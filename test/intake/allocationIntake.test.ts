/**
 * The intake alone, on a VirtualClock, with the job cache's reads stubbed: a job Nomad will not
 * serve for a while is reported once and looked up again on the clock; the memory of allocations
 * waiting for their client is bounded.
 */
import { VirtualClock } from '../../src/clock/index.js';
import type { AdmittedRecords } from '../../src/intake/admittedRecords.js';
import { AllocationIntake } from '../../src/intake/allocationIntake.js';
import { NomadHttpError } from '../../src/nomad/errors.js';
import type { Allocation, Job } from '../../src/nomad/types.js';
import { JobCache, type JobSource } from '../../src/streams/jobCache.js';
import { resolveScope } from '../../src/intake/scope.js';
import { silentLogger } from '../../src/logger.js';
import type { VerdictRecord } from '../../src/supervisor/types.js';
import { serviceJob } from '../testing/helpers.js';
import { NEWEST_NOMAD_RULES } from '../../machines/nomadRules.js';

const START = Date.UTC(2026, 10, 29, 21);
const nanos = (ms: number): bigint => BigInt(ms) * 1_000_000n;
const iso = (ms: number): string => new Date(ms).toISOString();

const JOB = { ...serviceJob('web'), Namespace: 'default', Version: 0, JobModifyIndex: 5, ModifyIndex: 5 } as unknown as Job;

/** An allocation of `web` its client received at `at` and started a moment later (or never reported, `reported: false`). */
function allocation(id: string, at: number, reported = true): Allocation {
  const events = [
    { Type: 'Received', Time: nanos(at) },
    { Type: 'Started', Time: nanos(at + 10) },
  ];
  return {
    ID: id, Name: `web.app[${id}]`, Namespace: 'default', JobID: 'web', TaskGroup: 'app', DeploymentID: 'd1',
    DesiredStatus: 'run', ClientStatus: reported ? 'running' : 'pending', CreateIndex: 10, ModifyIndex: 11, AllocModifyIndex: 10,
    CreateTime: nanos(at - 5), ModifyTime: nanos(at + 20),
    ...(reported ? { TaskStates: { main: { State: 'running', Failed: false, Restarts: 0, LastRestart: null, StartedAt: iso(at + 10), FinishedAt: null, Events: events } } } : {}),
  } as unknown as Allocation;
}

function intakeWith(source: JobSource, historySize = 100) {
  const clock = new VirtualClock({ start: START });
  const problems: string[] = [];
  const verdicts: VerdictRecord[] = [];
  const checks = { unavailable: () => undefined, follow: () => [], forget: () => undefined } as never;
  const intake = new AllocationIntake({
    nomad: { getDeployment: () => Promise.reject(new Error('no deployment reads here')) },
    clock,
    health: { clock },
    jobs: new JobCache(source, { clock, failureTtlMs: 30_000 }),
    scope: resolveScope(),
    release: { rules: NEWEST_NOMAD_RULES, whenKnown: () => Promise.resolve(NEWEST_NOMAD_RULES) },
    nodes: { cached: () => undefined, read: () => Promise.resolve({ problem: 'no node reads here' }) },
    checks,
    logger: silentLogger,
    historySize,
    report: (problem) => problems.push(problem.message),
  });
  intake.verdicts$.subscribe((record) => verdicts.push(record));
  return { clock, intake, problems, verdicts };
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
};

test('a job Nomad will not serve for a while: reported once, then looked up again and judged, with no update of the allocation in between', async () => {
  let failures = 3;
  const failing = <T>(answer: T): Promise<T> => (failures-- > 0 ? Promise.reject(new NomadHttpError(500, 'GET', '/v1/job/web', 'rpc error')) : Promise.resolve(answer));
  const source: JobSource = {
    getJobVersions: () => failing({ body: { Versions: [JOB] }, meta: { lastIndex: 5 } } as never),
    getJob: () => failing({ body: JOB, meta: { lastIndex: 5 } } as never),
    getDeployment: () => Promise.reject(new NomadHttpError(404, 'GET', '/v1/deployment/d1', 'deployment not found')),
  };
  const { clock, intake, problems, verdicts } = intakeWith(source);
  intake.receive(allocation('a', START - 60_000));
  await settle();
  expect(problems).toHaveLength(1);
  for (let i = 0; i < 4; i++) {
    clock.advance(30_000);
    await settle();
  }
  expect(problems).toHaveLength(1);
  expect(verdicts.map((v) => v.outcome)).toEqual([{ healthy: true, at: START - 60_000 + 10 + 2_000, reasons: {} }]);
});

test('allocations never reported by their client are forgotten oldest first beyond the history size', async () => {
  const source: JobSource = {
    getJobVersions: () => Promise.resolve({ body: { Versions: [JOB] }, meta: { lastIndex: 5 } } as never),
    getJob: () => Promise.resolve({ body: JOB, meta: { lastIndex: 5 } } as never),
    getDeployment: () => Promise.reject(new NomadHttpError(404, 'GET', '/v1/deployment/d1', 'deployment not found')),
  };
  const { intake } = intakeWith(source, 5);
  for (let i = 0; i < 12; i++) intake.receive(allocation(`p${i}`, START, false));
  await settle();
  const waiting = (intake as unknown as { admitted: AdmittedRecords }).admitted;
  expect([...waiting.all()].map((admitted) => admitted.ref.allocId)).toEqual(['p7', 'p8', 'p9', 'p10', 'p11']);
  // Their client reports one of the forgotten ones after all: it is judged from its history then.
  intake.receive(allocation('p0', START));
  await settle();
  expect(waiting.record('p0')).toBeDefined();
});
