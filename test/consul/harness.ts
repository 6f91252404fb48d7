/** The supervisor over FakeNomad and FakeConsul on one VirtualClock, with a ConsulClient it shares. */
import { VirtualClock } from '../../src/clock/index.js';
import { ConsulClient } from '../../src/consul/client.js';
import { NomadClient } from '../../src/nomad/client.js';
import { createSupervisor } from '../../src/supervisor/index.js';
import type { LogFields, LogSink } from '../../src/logger.js';
import type { Supervisor } from '../../src/supervisor/supervisor.js';
import type { SupervisorProblem, VerdictRecord } from '../../src/supervisor/types.js';
import { FakeConsul } from '../../src/testing/fakeConsul.js';
import { FakeNomad, type FakeNomadVersion } from '../../src/testing/fakeNomad.js';
import { serviceJob } from '../testing/helpers.js';
import { flush } from '../supervisor/support/harness.js';

export interface ConsulHarness {
  clock: VirtualClock;
  nomad: FakeNomad;
  consul: FakeConsul;
  client: ConsulClient;
  supervisor: Supervisor;
  verdicts: VerdictRecord[];
  problems: SupervisorProblem[];
  logs: string[];
  close(): Promise<void>;
}

export interface ConsulHarnessOptions {
  /** ACL token FakeConsul requires. */
  token?: string;
  /** Token the client sends (default `token`). */
  clientToken?: string;
  /** Give the supervisor no Consul at all. */
  withoutConsul?: boolean;
  /** The Nomad release FakeNomad plays (default 2.0: today's check rules). */
  nomadVersion?: FakeNomadVersion;
}

export async function startConsulHarness(start: number, options: ConsulHarnessOptions = {}): Promise<ConsulHarness> {
  const clock = new VirtualClock({ start });
  const nomad = await FakeNomad.start({ clock, version: options.nomadVersion ?? '2.0' });
  const consul = await FakeConsul.start({ clock, ...(options.token === undefined ? {} : { token: options.token }) });
  const clientToken = options.clientToken ?? options.token;
  // No gzip: every answer is plain socket I/O that `flush` lets through.
  const client = new ConsulClient({ address: consul.address, ...(clientToken === undefined ? {} : { token: clientToken }) }, { clock, gzip: false });
  const nomadClient = new NomadClient({ address: nomad.address }, { clock, gzip: false });
  const logs: string[] = [];
  const record = (level: string) => (fields: LogFields, message: string) => logs.push(`${level} ${message} ${JSON.stringify(fields)}`);
  const logger: LogSink = { debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error') };
  const supervisor = createSupervisor({ nomad: nomadClient, clock, logger, ...(options.withoutConsul ? {} : { consul: client }) });
  const verdicts: VerdictRecord[] = [];
  const problems: SupervisorProblem[] = [];
  supervisor.verdicts$.subscribe((v) => verdicts.push(v));
  supervisor.problems$.subscribe((p) => problems.push(p));
  for (let i = 0; i < 50 && JSON.stringify(supervisor.actor.getSnapshot().value) !== '{"running":"streaming"}'; i++) await flush();
  return {
    clock, nomad, consul, client, supervisor, verdicts, problems, logs,
    close: async () => {
      await supervisor.stop();
      await nomadClient.close();
      await client.close();
      await consul.close();
      await nomad.close();
    },
  };
}

export interface ServiceSpec {
  readonly name: string;
  readonly onUpdate?: string;
  readonly checks: readonly { readonly name: string; readonly onUpdate?: string }[];
}

/**
 * A service job (update: health_check "checks", min_healthy_time 2 s, healthy_deadline 20 s) whose
 * group `app` has the task `main`; the services are the task's, or the group's with `group`; Nomad's
 * own (provider = "nomad") with `provider`.
 */
export function checkedJob(id: string, services: readonly ServiceSpec[], options: { group?: boolean; count?: number; provider?: 'nomad' } = {}): Record<string, unknown> {
  const base = serviceJob(id);
  const declared = services.map((service) => ({
    Name: service.name,
    ...(options.provider ? { Provider: options.provider } : {}),
    PortLabel: 'http',
    ...(service.onUpdate ? { OnUpdate: service.onUpdate } : {}),
    Checks: service.checks.map((check) => ({ Name: check.name, Type: 'http', Path: '/', Interval: 1e9, Timeout: 1e9, ...(check.onUpdate ? { OnUpdate: check.onUpdate } : {}) })),
  }));
  const template = (base.TaskGroups as Record<string, unknown>[])[0] as Record<string, unknown>;
  const task = (template.Tasks as Record<string, unknown>[])[0] as Record<string, unknown>;
  const group = options.group
    ? { ...template, Count: options.count ?? 1, Services: declared }
    : { ...template, Count: options.count ?? 1, Tasks: [{ ...task, Services: declared }] };
  return { ...base, Update: { ...(base.Update as object), HealthCheck: 'checks' }, TaskGroups: [group] };
}
