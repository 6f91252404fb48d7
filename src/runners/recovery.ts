/**
 * What a Warden started over a live cluster finds there (Poseidon's environment and runner Load):
 * every environment from its template job, every runner job of it with its meta and current
 * allocation. Used runners stay used (their inactivity timeout from the meta), idle ones rejoin the
 * pool, starting ones go on starting; runners that cannot serve (their allocation gone, their job
 * stopped or dead, an idle one made from an older template) are retired. Runner jobs of unknown
 * environments are reported, never deleted. A runner job marked used at version 0 was never marked
 * by an update: a used mark re-created it after its purge (issue 19), and it is set apart to be purged.
 */
import type { RecoveredPhase, RunnerAllocation, RunnerInput } from '../../machines/runnerTypes.js';
import type { NomadClient } from '../nomad/client.js';
import type { AllocationListStub, Job, JobListStub } from '../nomad/types.js';
import type { JobWrites } from './jobWrites.js';
import { environmentOfRunner, environmentOfTemplate, isRecreatedRunner, runnerMeta, runnerTemplateKey, specOfJob, type ResolvedEnvironmentSpec } from './poseidonFormat.js';
import { runnerAllocation } from './runnerAllocation.js';

export interface RecoveredEnvironment {
  spec: ResolvedEnvironmentSpec;
  templateKey: string;
  runners: Omit<RunnerInput, 'io' | 'spec'>[];
}

export interface ClusterPools {
  environments: RecoveredEnvironment[];
  /** Runner jobs whose environment has no template job. */
  orphans: string[];
  /** Runner jobs a used mark re-created after their purge (used at version 0): not runners any more. */
  recreated: string[];
}

type Recovered = { runner: Omit<RunnerInput, 'io' | 'spec'> } | { recreated: string };

const isClientTerminal = (stub: AllocationListStub): boolean => ['complete', 'failed', 'lost'].includes(stub.ClientStatus);

/** The allocation a runner job runs now: the newest that has not ended, else the newest. */
function currentAllocation(stubs: readonly AllocationListStub[]): AllocationListStub | undefined {
  const newest = [...stubs].sort((a, b) => b.CreateIndex - a.CreateIndex);
  return newest.find((stub) => stub.DesiredStatus === 'run' && !isClientTerminal(stub)) ?? newest[0];
}

function phaseOf(job: Job, used: boolean, allocation: RunnerAllocation | undefined, current: boolean): RecoveredPhase {
  if (job.Stop === true || job.Status === 'dead' || allocation === undefined || allocation.status === 'ended') return 'stale';
  if (used) return allocation.status === 'running' ? 'used' : 'stale';
  if (!current) return 'stale';
  return allocation.status === 'running' ? 'idle' : 'starting';
}

async function recoverRunner(
  nomad: NomadClient,
  writes: JobWrites,
  stub: JobListStub,
  environment: RecoveredEnvironment,
  at: () => number,
): Promise<Recovered | undefined> {
  const job = await writes.read(stub.ID);
  if (job === undefined) return undefined;
  if (isRecreatedRunner(job)) return { recreated: job.ID };
  const meta = runnerMeta(job);
  const stubs = (await nomad.jobAllocations(stub.ID)).body;
  const chosen = currentAllocation(stubs);
  // The list stub has no ports: the full allocation does.
  const full = chosen && !isClientTerminal(chosen) ? (await nomad.getAllocation(chosen.ID)).body : chosen;
  const allocation = full && runnerAllocation(full, at());
  const templateKey = runnerTemplateKey(specOfJob(job, environment.spec.id));
  const phase = phaseOf(job, meta.used, allocation, templateKey === environment.templateKey);
  return {
    runner: {
      runnerId: stub.ID,
      environmentId: environment.spec.id,
      templateKey,
      recovered: { phase, allocation, timeoutMs: meta.timeoutS * 1000, markAgain: meta.used && meta.timeoutMissing },
    },
  };
}

/** Reads every environment and runner of the namespace. */
export async function readClusterPools(nomad: NomadClient, writes: JobWrites, at: () => number): Promise<ClusterPools> {
  const stubs = await writes.list('');
  const environments = new Map<number, RecoveredEnvironment>();
  for (const stub of stubs) {
    const id = environmentOfTemplate(stub.ID);
    if (id === undefined || stub.Stop) continue;
    const job = await writes.read(stub.ID);
    if (job === undefined) continue;
    const spec = specOfJob(job, id);
    environments.set(id, { spec, templateKey: runnerTemplateKey(spec), runners: [] });
  }
  const orphans: string[] = [];
  const recreated: string[] = [];
  const reads: Promise<void>[] = [];
  for (const stub of stubs) {
    const id = environmentOfRunner(stub.ID);
    if (id === undefined) continue;
    const environment = environments.get(id);
    if (environment === undefined) orphans.push(stub.ID);
    else {
      reads.push(recoverRunner(nomad, writes, stub, environment, at).then((found) => {
        if (found === undefined) return;
        if ('recreated' in found) recreated.push(found.recreated);
        else environment.runners.push(found.runner);
      }));
    }
  }
  await Promise.all(reads);
  // In the order Nomad listed them, whatever order the reads finished in.
  for (const environment of environments.values()) environment.runners.sort((a, b) => a.runnerId.localeCompare(b.runnerId));
  return { environments: [...environments.values()], orphans, recreated: recreated.sort() };
}
