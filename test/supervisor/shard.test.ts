/**
 * Scale out: `--shard i/n` splits a cluster's jobs among n supervisors by a stable hash of (namespace,
 * job ID). Every job is judged by exactly one shard, and n shards together reach exactly the verdicts
 * of one unsharded supervisor; deploy/warden-watch.nomad.hcl runs them as one Nomad job.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { jobShard, listenAddress } from '../../src/cli/argumentParsers.js';
import { VirtualClock } from '../../src/clock/index.js';
import { NomadClient } from '../../src/nomad/client.js';
import { createSupervisor, SupervisorScopeError, type Supervisor, type VerdictRecord } from '../../src/supervisor/index.js';
import { ShardError, resolveScope, shardOf, type JobShard } from '../../src/intake/scope.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { parseJobHcl } from '../../src/testing/nomad/hcl.js';
import { serviceJob } from '../testing/helpers.js';
import { driveTo } from './support/harness.js';

const START = Date.UTC(2026, 10, 30, 9);
const jobIds = (n: number): string[] => Array.from({ length: n }, (_, i) => `job-${i}`);

describe('shardOf', () => {
  test('is the same in every process and version: pinned values', () => {
    // A change of the hash would move jobs between shards already running: it must fail here.
    expect(['web', 'api', 'batch-7', 'runner-0f3a', 'job-0', 'job-1'].map((id) => shardOf('default', id, 5))).toEqual([0, 4, 2, 3, 1, 4]);
    expect(shardOf('prod', 'web', 5)).toBe(2);
  });

  test('namespace matters, and an empty namespace is "default"', () => {
    const moved = jobIds(200).filter((id) => shardOf('prod', id, 4) !== shardOf('default', id, 4));
    expect(moved.length).toBeGreaterThan(100);
    expect(jobIds(50).every((id) => shardOf('', id, 4) === shardOf('default', id, 4) && shardOf(undefined, id, 4) === shardOf('default', id, 4))).toBe(true);
  });

  test('spreads jobs evenly: 3,000 jobs on 3 shards, each within 10% of a third', () => {
    const counts = [0, 0, 0];
    for (const id of jobIds(3_000)) counts[shardOf('default', id, 3)]!++;
    for (const count of counts) expect(Math.abs(count - 1_000)).toBeLessThan(100);
  });

  test('from n to n+1 shards only the jobs the new shard takes move, about 1/(n+1) of them', () => {
    for (const n of [1, 2, 3, 5, 8]) {
      const ids = jobIds(4_000);
      const moved = ids.filter((id) => shardOf('default', id, n) !== shardOf('default', id, n + 1));
      expect(moved.every((id) => shardOf('default', id, n + 1) === n)).toBe(true);
      expect(Math.abs(moved.length / ids.length - 1 / (n + 1))).toBeLessThan(0.03);
    }
  });

  test('a scope with a shard includes each job in exactly one of its shards; bad shards are refused', () => {
    const scopes = [0, 1, 2].map((index) => resolveScope({ namespaces: ['*'], shard: { index, count: 3 } }));
    for (const id of jobIds(300)) expect(scopes.filter((scope) => scope.includes('default', id))).toHaveLength(1);
    expect(resolveScope({ shard: { index: 0, count: 1 } }).includes('default', 'any')).toBe(true);
    for (const shard of [{ index: 3, count: 3 }, { index: -1, count: 3 }, { index: 0, count: 0 }, { index: 0.5, count: 2 }]) {
      expect(() => resolveScope({ shard })).toThrow(ShardError);
    }
    expect(jobShard('2/3')).toEqual({ index: 2, count: 3 });
    for (const bad of ['3/3', '1', 'a/b', '-1/3', '0/0']) expect(() => jobShard(bad)).toThrow(/i\/n/);
  });
});

/** A cluster of 12 jobs in two namespaces: some allocations healthy on the clock, some failing, one stopped. */
function scriptCluster(fake: FakeNomad): () => void {
  const { cluster } = fake;
  const placed: { id: string; n: number }[] = [];
  for (const [n, id] of jobIds(12).entries()) {
    const namespace = n % 3 === 0 ? 'prod' : 'default';
    cluster.registerJob(serviceJob(id, { Namespace: namespace }), { namespace });
    for (const alloc of cluster.placeAllocations(id, { namespace })) placed.push({ id: alloc.ID, n });
  }
  return () => {
    for (const { id, n } of placed) {
      cluster.startTask(id);
      if (n % 4 === 1) cluster.failTask(id, 'main', { exitCode: 1 });
    }
    const stopped = placed.find(({ n }) => n === 6);
    if (stopped) cluster.setDesiredStatus(stopped.id, 'stop');
  };
}

function verdictKey(record: VerdictRecord): string {
  const { outcome } = record;
  const what = 'stopped' in outcome ? 'stopped' : 'undetermined' in outcome ? 'undetermined' : outcome.healthy ? 'healthy' : `unhealthy ${JSON.stringify(outcome.reasons)}`;
  return `${record.alloc.namespace}/${record.alloc.allocId} ${what} at ${outcome.at}`;
}

describe('three shards over one FakeNomad', () => {
  test('reach exactly the verdicts of one unsharded supervisor, each job judged by one shard', async () => {
    const clock = new VirtualClock({ start: START });
    // Nomad >= 1.2: one stream for namespace "*", as the jobspec's --namespace=*.
    const fake = await FakeNomad.start({ clock, namespaceWildcard: true });
    const run = scriptCluster(fake);
    const client = new NomadClient({ address: fake.address }, { clock, gzip: false });
    const make = (shard?: JobShard): { supervisor: Supervisor; verdicts: VerdictRecord[] } => {
      const supervisor = createSupervisor({ nomad: client, clock, scope: { namespaces: ['*'], ...(shard ? { shard } : {}) } });
      const verdicts: VerdictRecord[] = [];
      supervisor.verdicts$.subscribe((record) => verdicts.push(record));
      return { supervisor, verdicts };
    };
    const whole = make();
    const shards = [0, 1, 2].map((index) => make({ index, count: 3 }));
    try {
      await driveTo(clock, START + 500);
      run();
      await driveTo(clock, START + 15_000);
      const expected = whole.verdicts.map(verdictKey).sort();
      expect(expected.length).toBeGreaterThanOrEqual(20);
      expect(expected.some((key) => key.includes(' healthy'))).toBe(true);
      expect(expected.some((key) => key.includes(' unhealthy'))).toBe(true);
      expect(expected.some((key) => key.includes(' stopped'))).toBe(true);
      expect(shards.flatMap((shard) => shard.verdicts.map(verdictKey)).sort()).toEqual(expected);
      // Every shard has a share, and no job appears in two shards.
      const jobsOf = shards.map((shard) => new Set(shard.verdicts.map((v) => `${v.alloc.namespace}/${v.alloc.jobId}`)));
      for (const jobs of jobsOf) expect(jobs.size).toBeGreaterThan(0);
      expect(jobsOf.reduce((sum, jobs) => sum + jobs.size, 0)).toBe(new Set(jobsOf.flatMap((jobs) => [...jobs])).size);
      // A deploy gate on a shard that does not judge the job is refused, not left waiting.
      const [outside] = jobIds(12).filter((id) => n(id) % 3 !== 0 && shardOf('default', id, 3) !== 0);
      await expect(shards[0]!.supervisor.waitForDeployment(outside!, { namespace: 'default' })).rejects.toThrow(SupervisorScopeError);
    } finally {
      for (const { supervisor } of [whole, ...shards]) await supervisor.stop();
      await client.close();
      await fake.close();
    }
  });
});

function n(id: string): number {
  return Number(id.slice('job-'.length));
}

describe('deploy/warden-watch.nomad.hcl', () => {
  const hcl = readFileSync(join(__dirname, '..', '..', 'deploy', 'warden-watch.nomad.hcl'), 'utf8');

  test('runs count shards of one job, each `warden watch --shard NOMAD_ALLOC_INDEX/count` with its metrics on its own port', () => {
    const job = parseJobHcl(hcl) as { ID: string; TaskGroups: { Count: number; Tasks: { Config: { command: string; args: string[] }; Env: Record<string, string> }[] }[] };
    const [group] = job.TaskGroups;
    const [task] = group!.Tasks;
    const { args } = task!.Config;
    expect(args).toContain('watch');
    expect(args).toContain('--namespace=*');
    const count = group!.Count;
    expect(count).toBeGreaterThan(1);
    // Each allocation's own index, as Nomad interpolates it, names a valid and different shard of `count`.
    const shards = Array.from({ length: count }, (_, index) => {
      const shardArg = args.find((arg) => arg.startsWith('--shard='))!.slice('--shard='.length).replace('${NOMAD_ALLOC_INDEX}', String(index));
      return jobShard(shardArg);
    });
    expect(shards).toEqual(Array.from({ length: count }, (_, index) => ({ index, count })));
    const metricsArg = args.find((arg) => arg.startsWith('--metrics='))!.slice('--metrics='.length);
    expect(metricsArg).toBe('${NOMAD_ADDR_metrics}');
    expect(listenAddress('10.0.0.7:23456')).toEqual({ host: '10.0.0.7', port: 23456 });
    expect(task!.Env.NOMAD_ADDR).toBe('${NOMAD_UNIX_ADDR}');
    expect(hcl).toMatch(/port "metrics" \{\}/);
    expect(hcl).toMatch(/service \{[\s\S]*provider = "nomad"[\s\S]*port {5}= "metrics"[\s\S]*check \{[\s\S]*path {5}= "\/metrics"/);
  });
});
