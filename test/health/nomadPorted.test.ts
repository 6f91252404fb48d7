/**
 * The cases of Nomad's own health tests, ported: client/allochealth/tracker_test.go and
 * client/allocrunner/health_hook_test.go, on hashicorp/nomad main (2.0.6-dev, aa026cc99c) and on
 * v1.1.2 where its tests differ. One row per Go test (per t.Run case for the table tests), with
 * Nomad's expectation; each row is judged by the rules of the release it comes from.
 *
 * The Go tests drive the tracker with real time and a mock Consul; here the same inputs (the
 * job as the API serves it, after the server's Canonicalize; the task states; the registered
 * checks) go through the same pieces the supervisor uses (healthPolicyFor / judgementOf,
 * allocationPolicy with the allocation's task environment, the health registry on a VirtualClock).
 * "No health within N check intervals" becomes "no verdict N intervals later"; "healthy" is the
 * verdict, with the task events Nomad would emit (none for a healthy allocation).
 *
 * Left out (no Warden counterpart; listed in the closing note of issue 21):
 * - health_hook_test.go TestHealthHook_PrerunUpdatePostrun: concurrent Update calls into one hook
 *   (Go locking); TestHealthHook_Postrun: a hook given only Postrun (its life cycle).
 */
import { NEWEST_NOMAD_RULES, nomadRulesFor, type NomadRules } from '../../machines/nomadRules.js';
import { checksPassing } from '../../machines/allocationHealthRules.js';
import type { CheckStatus, CheckView, HealthPolicy } from '../../machines/allocationHealthTypes.js';
import { allocationPolicy, healthPolicyFor } from '../../src/health/policy.js';
import { taskEnvironments } from '../../src/health/taskEnvironment.js';
import { judgementOf } from '../../src/intake/judgement.js';
import type { Allocation, Job, NomadNode, Service, Task, TaskGroup } from '../../src/nomad/types.js';
import type { HealthRegistry } from '../../src/health/index.js';
import { T0, harness, running, task, view } from './support/builders.js';

const TRACKER = 'client/allochealth/tracker_test.go';
const HOOK = 'client/allocrunner/health_hook_test.go';
type NomadFile = typeof TRACKER | typeof HOOK;

/** The tracker's check lookup interval in the Go tests (tracker.checkLookupInterval = 10ms). */
const CHECK_INTERVAL = 10;
const MAIN_RULES = NEWEST_NOMAD_RULES;
const RULES_1_1_2 = nomadRulesFor('1.1.2').rules;

// --- nomad/mock, as the API serves it -------------------------------------------------------

/** mock.Job's web task: its services after Service.Canonicalize (${TASK} replaced). */
function mockTask(name = 'web', services: Service[] = mockServices(name)): Task {
  return { Name: name, Driver: 'exec', Services: services } as Task;
}

function mockServices(taskName: string): Service[] {
  return [
    { Name: `${taskName}-frontend`, PortLabel: 'http', Checks: [{ Name: 'check-table', Type: 'script' }] },
    { Name: `${taskName}-admin`, PortLabel: 'admin' },
  ] as Service[];
}

/** mock.Job: a service job, group web, its migrate block with MinHealthyTime = 1 (the tests' "speed things up"). */
function mockJob(overrides: Partial<Job> = {}, group: Partial<TaskGroup> = {}): Job {
  return {
    ID: 'mock-service',
    Name: 'my-job',
    Region: 'global',
    Namespace: 'default',
    Type: 'service',
    Datacenters: ['dc1'],
    TaskGroups: [{ Name: 'web', Count: 10, Migrate: { MaxParallel: 1, HealthCheck: 'checks', MinHealthyTime: 1, HealthyDeadline: 300_000_000_000 }, Tasks: [mockTask()], ...group } as TaskGroup],
    ...overrides,
  } as Job;
}

/** mock.Node: datacenter dc1. */
const MOCK_NODE = { ID: 'node-1', Name: 'foobar', Datacenter: 'dc1', NodeClass: 'linux-medium-pci', Attributes: {}, Meta: {} } as NomadNode;

function mockAlloc(job: Job): Allocation {
  return { ID: '8d2f5a3c-0000-4000-8000-000000000001', Name: `${job.ID}.web[0]`, JobID: job.ID, TaskGroup: 'web', Namespace: 'default', NodeID: MOCK_NODE.ID, Job: job } as Allocation;
}

function groupOf(job: Job): TaskGroup {
  return (job.TaskGroups ?? [])[0] as TaskGroup;
}

/** The tracker's policy for a mock allocation outside a deployment (health_hook.go: the migrate block), names interpolated. */
function trackerPolicy(job: Job, rules: NomadRules): HealthPolicy {
  const decision = healthPolicyFor(job, 'web', { deployment: false, migration: true, rules });
  if (!decision.watched) throw new Error(decision.reason);
  const group = groupOf(job);
  return allocationPolicy(decision.policy, group, taskEnvironments(job, group, mockAlloc(job), MOCK_NODE));
}

const consulCheck = (taskName: string, service: string, name: string, status: CheckStatus = 'passing', sidecar = false): CheckView =>
  sidecar ? { task: taskName, service, name, status, sidecar } : { task: taskName, service, name, status };

// --- the outcomes a row compares --------------------------------------------------------------

type Outcome = 'healthy' | 'unhealthy' | 'stopped' | 'no verdict';

/** The registry's verdict on the allocation, as a word. */
function verdictOf(registry: HealthRegistry): { outcome: Outcome; reasons?: Record<string, string> } {
  const outcome = registry.status('alloc')?.outcome;
  if (outcome === null || outcome === undefined) return { outcome: 'no verdict' };
  if ('stopped' in outcome) return { outcome: 'stopped' };
  return { outcome: outcome.healthy ? 'healthy' : 'unhealthy', reasons: outcome.reasons };
}

interface Run {
  readonly job: Job;
  /** Task states at the start (all running from T0 unless given). */
  readonly tasks?: Record<string, ReturnType<typeof task>>;
  /** What Consul answers, in turn, one lookup each check interval (the tests' "don't reply on the first call" is an empty first answer). */
  readonly lookups: readonly (readonly CheckView[])[];
  /** How long the test waits for a health event. */
  readonly waitMs: number;
}

/** Runs the tracker on `run`: the outcome once the wait is over, and the reasons of a verdict. */
function track(run: Run, rules: NomadRules): { outcome: Outcome; reasons?: Record<string, string> } {
  const { clock, registry } = harness();
  const tasks = run.tasks ?? Object.fromEntries(groupOf(run.job).Tasks.map((t) => [t.Name, running(T0)]));
  registry.track('alloc', trackerPolicy(run.job, rules), view(tasks));
  run.lookups.forEach((checks, i) => {
    clock.advanceTo(T0 + i * CHECK_INTERVAL);
    registry.updateChecks('alloc', checks);
  });
  clock.advanceTo(T0 + run.waitMs);
  return verdictOf(registry);
}

interface Row {
  readonly file: NomadFile;
  /** The Go test, and its t.Run case. */
  readonly test: string;
  /** The Nomad source the case is read from. */
  readonly nomad: 'main' | 'v1.1.2';
  /** What Nomad's test expects. */
  readonly expected: unknown;
  readonly actual: (rules: NomadRules) => unknown;
}

const rulesOf = (row: Row): NomadRules => (row.nomad === 'main' ? MAIN_RULES : RULES_1_1_2);

// --- tracker_test.go --------------------------------------------------------------------------

/** mock.Alloc's one check (web-frontend / check-table), answering `status` from the second lookup on. */
function singleCheck(status: CheckStatus): Run {
  const checks = [consulCheck('web', 'web-frontend', 'check-table', status)];
  return { job: mockJob(), lookups: [[], checks, checks, checks], waitMs: 4 * CHECK_INTERVAL };
}

/** A second check "failing-check" on web-frontend, critical (TestTracker_ConsulChecks_Unhealthy, TestHealthHook_SetHealth_unhealthy). */
function oneOfTwoFailing(waitMs: number): Run {
  const services = mockServices('web');
  services[0] = { ...services[0], Checks: [...(services[0]?.Checks ?? []), { Name: 'failing-check', Type: 'script' }] } as Service;
  const checks = [consulCheck('web', 'web-frontend', 'check-table'), consulCheck('web', 'web-frontend', 'failing-check', 'critical')];
  return { job: mockJob({}, { Tasks: [mockTask('web', services)] }), lookups: [[], checks, checks, checks], waitMs };
}

function interpolationRun(): Run {
  // As the server stores it: Service.Canonicalize replaced ${TASKGROUP} and ${TASK}, and named the unnamed checks
  // `service: "<name>" check` with the name as it then stood; the client interpolates the rest.
  const taskServices = (name: string): Service[] => [
    { Name: `task-${name}-service-\${NOMAD_REGION}`, TaskName: name, PortLabel: 'http', Checks: [{ Name: `service: "task-${name}-service-\${NOMAD_REGION}" check` }, { Name: 'task-${NOMAD_TASK_NAME}-check-${NOMAD_REGION}' }] } as Service,
  ];
  const job = mockJob({}, {
    Services: [{ Name: 'group-web-service-${NOMAD_DC}', PortLabel: 'http', Checks: [{ Name: 'service: "group-web-service-${NOMAD_DC}" check' }, { Name: 'group-${NOMAD_GROUP_NAME}-check' }] } as Service],
    Tasks: [mockTask('server', taskServices('server')), mockTask('proxy', taskServices('proxy'))],
  });
  const registered = [
    consulCheck('', 'group-web-service-dc1', 'service: "group-web-service-dc1" check'),
    consulCheck('', 'group-web-service-dc1', 'group-web-check'),
    ...['server', 'proxy'].flatMap((name) => [
      consulCheck(name, `task-${name}-service-global`, `service: "task-${name}-service-global" check`),
      consulCheck(name, `task-${name}-service-global`, `task-${name}-check-global`),
    ]),
  ];
  return { job, lookups: [registered], waitMs: 4 * CHECK_INTERVAL };
}

/** A Nomad service check (provider = "nomad"): pending (no result yet), then `result` after 15 ms; readiness mode is on_update = "ignore". */
function nomadCheckRun(result: 'success' | 'failure', mode: 'healthiness' | 'readiness'): Run {
  const services = mockServices('web').map((service) => ({ ...service, Provider: 'nomad' })) as Service[];
  if (mode === 'readiness') services[0] = { ...services[0], Checks: [{ Name: 'check-table', Type: 'http', OnUpdate: 'ignore' }] } as Service;
  const done = [consulCheck('web', 'web-frontend', 'check-table', result === 'success' ? 'passing' : 'critical')];
  // checkResults.ts: a pending result is no result.
  return { job: mockJob({}, { Tasks: [mockTask('web', services)] }), lookups: [[], [], done, done], waitMs: 4 * CHECK_INTERVAL };
}

function onUpdateRun(onUpdate: 'require_healthy' | 'ignore_warnings' | 'ignore', status: CheckStatus): Run {
  const services = mockServices('web');
  services[0] = { ...services[0], Checks: [{ Name: 'check-table', Type: 'script', OnUpdate: onUpdate }] } as Service;
  const checks = [consulCheck('web', 'web-frontend', 'check-table', status)];
  return { job: mockJob({}, { Tasks: [mockTask('web', services)] }), lookups: [[], checks, checks, checks], waitMs: 4 * CHECK_INTERVAL };
}

const ON_UPDATE_CASES = [
  ['check require_healthy consul healthy', 'require_healthy', 'passing', 'healthy'],
  ['check on_update ignore_warning, consul warn', 'ignore_warnings', 'warning', 'healthy'],
  ['check on_update ignore_warning, consul critical', 'ignore_warnings', 'critical', 'no verdict'],
  ['check on_update ignore_warning, consul healthy', 'ignore_warnings', 'passing', 'healthy'],
  ['check on_update ignore, consul critical', 'ignore', 'critical', 'healthy'],
] as const;

const NOMAD_ON_UPDATE_CASES = [
  ['mode is healthiness and check is healthy', 'healthiness', 'success', 'healthy'],
  ['mode is healthiness and check is unhealthy', 'healthiness', 'failure', 'no verdict'],
  ['mode is readiness and check is healthy', 'readiness', 'success', 'healthy'],
  // (Nomad names its fourth case as its third.)
  ['mode is readiness and check is healthy (failure)', 'readiness', 'failure', 'healthy'],
] as const;

/** TestTracker_evaluateConsulChecks: the task group (group services under task '', the one unnamed task's as 'task') and what Consul registered. */
function evaluate(group: { group?: Service[]; task?: Service[] }, registered: CheckView[], rules: NomadRules): boolean {
  const job = mockJob({}, { Services: group.group ?? [], Tasks: [mockTask('task', group.task ?? [])] });
  return checksPassing(trackerPolicy(job, rules), registered);
}

const svc = (name: string, checks: string[] = [], onUpdate?: string): Service =>
  ({ Name: name, Checks: checks.map((check) => ({ Name: check })), ...(onUpdate ? { OnUpdate: onUpdate } : {}) }) as Service;

const EVALUATE_CASES: readonly [string, boolean, (rules: NomadRules) => boolean][] = [
  ['no checks', true, (rules) => evaluate({ group: [svc('group-s1')], task: [svc('task-s2')] }, [], rules)],
  ['missing group check', false, (rules) => evaluate({ group: [svc('group-s1', ['c1'])], task: [svc('task-s2')] }, [], rules)],
  ['missing task check', false, (rules) => evaluate({ group: [svc('group-s1')], task: [svc('task-s2', ['c1'])] }, [], rules)],
  ['failing group check', false, (rules) => evaluate({ group: [svc('group-s1', ['c1'])] }, [consulCheck('', 'group-s1', 'c1', 'critical')], rules)],
  ['failing task check', false, (rules) => evaluate({ task: [svc('task-s2', ['c1'])] }, [consulCheck('task', 'task-s2', 'c1', 'critical')], rules)],
  [
    'passing checks',
    true,
    (rules) => evaluate({ group: [svc('group-s1', ['c1'])], task: [svc('task-s2', ['c2'])] }, [consulCheck('', 'group-s1', 'c1'), consulCheck('task', 'task-s2', 'c2')], rules),
  ],
  ['on update ignore warn', true, (rules) => evaluate({ group: [svc('group-s1', ['c1'], 'ignore_warnings')] }, [consulCheck('', 'group-s1', 'c1', 'warning')], rules)],
  ['on update ignore critical', true, (rules) => evaluate({ group: [svc('group-s1', ['c1'], 'ignore')] }, [consulCheck('', 'group-s1', 'c1', 'critical')], rules)],
  [
    'failing sidecar checks only',
    false,
    (rules) => evaluate({ group: [svc('group-s1', ['c1'])] }, [consulCheck('', 'group-s1', 'c1'), consulCheck('', 'group-s1-sidecar-proxy', 'sidecar-check', 'critical', true)], rules),
  ],
];

/**
 * TestTracker_Healthy_IfBothTasksAndConsulChecksAreHealthy drives setTaskHealth / setCheckHealth by
 * hand: tasks healthy, then not (a restart) before the checks pass; checks pass; tasks healthy again;
 * health only at the check watcher's next firing with both healthy. Here with min_healthy_time 1 s.
 */
function bothHealthy(rules: NomadRules): Outcome[] {
  const { clock, registry } = harness();
  const policy = { ...trackerPolicy(mockJob(), rules), minHealthyTimeMs: 1000 };
  const checks = [consulCheck('web', 'web-frontend', 'check-table')];
  const seen: Outcome[] = [];
  const now = (): Outcome => verdictOf(registry).outcome;
  registry.track('alloc', policy, view({ web: running(T0) }));
  clock.advanceTo(T0 + 1000); // setTaskHealth(true): running for min_healthy_time, no checks yet
  seen.push(now());
  registry.updateAllocation('alloc', view({ web: task({ restarts: 1 }) })); // setTaskHealth(false)
  seen.push(now());
  registry.updateChecks('alloc', checks); // setCheckHealth(true): its timer starts
  seen.push(now());
  registry.updateAllocation('alloc', view({ web: running(T0 + 1000, { restarts: 1 }) })); // tasks running again
  seen.push(now());
  clock.advanceTo(T0 + 2000); // both healthy for min_healthy_time: the next check firing reports
  seen.push(now());
  return seen;
}

/** TestTracker_Checks_Healthy_Before_TaskHealth: web's check passes while web2 (no services) is pending; then web2 runs. */
function checksBeforeTasks(rules: NomadRules): Outcome[] {
  const { clock, registry } = harness();
  const job = mockJob({}, { Tasks: [mockTask('web'), mockTask('web2', [])] });
  const checks = [consulCheck('web', 'web-frontend', 'check-table')];
  registry.track('alloc', trackerPolicy(job, rules), view({ web: running(T0), web2: task() }));
  clock.advanceTo(T0 + CHECK_INTERVAL);
  registry.updateChecks('alloc', checks);
  clock.advanceTo(T0 + 4 * CHECK_INTERVAL);
  const before = verdictOf(registry).outcome;
  registry.updateAllocation('alloc', view({ web: running(T0), web2: running(T0 + 4 * CHECK_INTERVAL) }));
  clock.advanceTo(T0 + 8 * CHECK_INTERVAL);
  return [before, verdictOf(registry).outcome];
}

/** TestTracker_ConsulChecks_HealthyToUnhealthy: passing for 1 s, then critical; min_healthy_time 2 s; no health after 2 s. */
function healthyToUnhealthy(rules: NomadRules): Outcome {
  const { clock, registry } = harness();
  const job = mockJob({}, { Tasks: [mockTask('web', [svc('web-frontend', ['my-check'])])] });
  registry.track('alloc', { ...trackerPolicy(job, rules), minHealthyTimeMs: 2000 }, view({ web: running(T0) }), [consulCheck('web', 'web-frontend', 'my-check')]);
  clock.advanceTo(T0 + 1000 + CHECK_INTERVAL);
  registry.updateChecks('alloc', [consulCheck('web', 'web-frontend', 'my-check', 'critical')]);
  clock.advanceTo(T0 + 2000);
  return verdictOf(registry).outcome;
}

/** TestTracker_ConsulChecks_SlowCheckRegistration: the service registered without its check for 10 lookups, then the check passing. */
function slowRegistration(): Run {
  const job = mockJob({}, { Tasks: [mockTask('web', [svc('web-frontend', ['my-check'])])] });
  const lookups = [...Array.from({ length: 10 }, () => []), [consulCheck('web', 'web-frontend', 'my-check')]];
  return { job, lookups, waitMs: 11 * CHECK_INTERVAL };
}

const mainAndOld = (file: NomadFile, main: string, old: string, expected: unknown, actual: (rules: NomadRules) => unknown): Row[] => [
  { file, test: main, nomad: 'main', expected, actual },
  { file, test: old, nomad: 'v1.1.2', expected, actual },
];

const ROWS: readonly Row[] = [
  // tracker_test.go, main
  { file: TRACKER, test: 'TestTracker_ConsulChecks_Interpolation', nomad: 'main', expected: { outcome: 'healthy', reasons: {} }, actual: (rules) => track(interpolationRun(), rules) },
  ...mainAndOld(TRACKER, 'TestTracker_ConsulChecks_Healthy', 'TestTracker_Checks_Healthy', { outcome: 'healthy', reasons: {} }, (rules) => track(singleCheck('passing'), rules)),
  { file: TRACKER, test: 'TestTracker_NomadChecks_Healthy', nomad: 'main', expected: 'healthy', actual: (rules) => track(nomadCheckRun('success', 'healthiness'), rules).outcome },
  { file: TRACKER, test: 'TestTracker_NomadChecks_Unhealthy', nomad: 'main', expected: 'no verdict', actual: (rules) => track(nomadCheckRun('failure', 'healthiness'), rules).outcome },
  ...mainAndOld(TRACKER, 'TestTracker_Checks_PendingPostStop_Healthy', 'TestTracker_Checks_PendingPostStop_Healthy', 'healthy', (rules) =>
    track({ job: mockJob({}, { Tasks: [mockTask('web', []), mockTask('post', [])] }), tasks: { web: running(T0), post: task({ hook: 'poststop' }) }, lookups: [[]], waitMs: 4 * CHECK_INTERVAL }, rules).outcome,
  ),
  {
    file: TRACKER,
    test: 'TestTracker_Succeeded_PostStart_Healthy',
    nomad: 'main',
    expected: 'healthy',
    actual: (rules) =>
      track({ job: mockJob({}, { Tasks: [mockTask('web', []), mockTask('post', [])] }), tasks: { web: running(T0), post: task({ state: 'dead', hook: 'poststart', startedAt: T0, finishedAt: T0 }) }, lookups: [[]], waitMs: 2 }, rules).outcome,
  },
  ...mainAndOld(TRACKER, 'TestTracker_ConsulChecks_Unhealthy', 'TestTracker_Checks_Unhealthy', 'no verdict', (rules) => track(oneOfTwoFailing(4 * CHECK_INTERVAL), rules).outcome),
  { file: TRACKER, test: 'TestTracker_ConsulChecks_HealthyToUnhealthy', nomad: 'main', expected: 'no verdict', actual: healthyToUnhealthy },
  { file: TRACKER, test: 'TestTracker_ConsulChecks_SlowCheckRegistration', nomad: 'main', expected: 'healthy', actual: (rules) => track(slowRegistration(), rules).outcome },
  ...mainAndOld(TRACKER, 'TestTracker_Healthy_IfBothTasksAndConsulChecksAreHealthy', 'TestTracker_Healthy_IfBothTasksAndConsulChecksAreHealthy', ['no verdict', 'no verdict', 'no verdict', 'no verdict', 'healthy'], bothHealthy),
  ...mainAndOld(TRACKER, 'TestTracker_Checks_Healthy_Before_TaskHealth', 'TestTracker_Checks_Healthy_Before_TaskHealth', ['no verdict', 'healthy'], checksBeforeTasks),
  ...ON_UPDATE_CASES.flatMap(([name, onUpdate, status, expected]) =>
    mainAndOld(TRACKER, `TestTracker_ConsulChecks_OnUpdate/${name}`, `TestTracker_Checks_OnUpdate/${name}`, expected, (rules) => track(onUpdateRun(onUpdate, status), rules).outcome),
  ),
  ...NOMAD_ON_UPDATE_CASES.map(([name, mode, result, expected]): Row => ({
    file: TRACKER,
    test: `TestTracker_NomadChecks_OnUpdate/${name}`,
    nomad: 'main',
    expected,
    actual: (rules) => track(nomadCheckRun(result, mode), rules).outcome,
  })),
  ...EVALUATE_CASES.map(([name, expected, actual]): Row => ({ file: TRACKER, test: `TestTracker_evaluateConsulChecks/${name}`, nomad: 'main', expected, actual })),

  // health_hook_test.go
  ...mainAndOld(HOOK, 'TestHealthHook_PrerunPostrun', 'TestHealthHook_PrerunPostrun', 'migrate', (rules) => {
    // No DeploymentID: isDeploy stays false; the migrate block judges.
    const judgement = judgementOf(mockJob(), 'web', { inDeployment: false, rules, checksUnavailable: () => undefined });
    return 'policy' in judgement ? judgement.policy.source : judgement.reason;
  }),
  ...mainAndOld(HOOK, 'TestHealthHook_UpdatePrerunPostrun', 'TestHealthHook_UpdatePrerunPostrun', 'update', (rules) => {
    // An update that sets a DeploymentID makes it a deployment's (isDeploy); mock.Job's update block judges.
    const job = mockJob({ Update: { MaxParallel: 1, HealthCheck: 'checks', MinHealthyTime: 10_000_000_000, HealthyDeadline: 300_000_000_000 } as Job['Update'] });
    const judgement = judgementOf(job, 'web', { inDeployment: true, rules, checksUnavailable: () => undefined });
    return 'policy' in judgement ? judgement.policy.source : judgement.reason;
  }),
  ...mainAndOld(HOOK, 'TestHealthHook_SetHealth_healthy', 'TestHealthHook_SetHealth_healthy', { outcome: 'healthy', reasons: {} }, (rules) => track({ ...singleCheck('passing'), waitMs: 5000 }, rules)),
  ...mainAndOld(HOOK, 'TestHealthHook_SetHealth_unhealthy', 'TestHealthHook_SetHealth_unhealthy', 'no verdict', (rules) => track(oneOfTwoFailing(2000), rules).outcome),
  {
    file: HOOK,
    test: 'TestHealthHook_System',
    nomad: 'main',
    expected: true,
    actual: (rules) => healthPolicyFor(mockJob({ Type: 'system' }), 'web', { deployment: false, migration: true, rules }).watched,
  },
  {
    file: HOOK,
    test: 'TestHealthHook_SystemNoop',
    nomad: 'v1.1.2',
    expected: false,
    actual: (rules) => healthPolicyFor(mockJob({ Type: 'system' }), 'web', { deployment: false, migration: true, rules }).watched,
  },
  ...mainAndOld(HOOK, 'TestHealthHook_BatchNoop', 'TestHealthHook_BatchNoop', false, (rules) => healthPolicyFor(mockJob({ Type: 'batch' }), 'web', { deployment: false, migration: true, rules }).watched),
];

describe.each(ROWS.map((row) => [row.file, row.nomad, row.test, row] as const))('%s (%s) %s', (_file, _nomad, _test, row) => {
  it('agrees with Nomad', () => {
    expect(row.actual(rulesOf(row))).toEqual(row.expected);
  });
});

test('the table counts: every case of both files, once per Nomad source', () => {
  const count = (file: NomadFile, nomad: Row['nomad']): number => ROWS.filter((row) => row.file === file && row.nomad === nomad).length;
  expect(new Set(ROWS.map((row) => `${row.nomad} ${row.test}`)).size).toBe(ROWS.length);
  expect({ trackerMain: count(TRACKER, 'main'), tracker112: count(TRACKER, 'v1.1.2'), hookMain: count(HOOK, 'main'), hook112: count(HOOK, 'v1.1.2') }).toEqual({
    trackerMain: 29,
    tracker112: 10,
    hookMain: 6,
    hook112: 6,
  });
});
