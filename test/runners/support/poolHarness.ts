/**
 * A supervisor with runner pools over a FakeNomad that acts as a cluster, on one VirtualClock:
 * real sockets, real processes for executions, time moving only when the test drives it, and then
 * only once the fake and the client are quiet (a runner's command running keeps them busy).
 */
import { tmpdir } from 'node:os';
import { VirtualClock, settle } from '../../../src/clock/index.js';
import type { InspectionObserver } from '../../../src/health/inspection.js';
import { NomadClient } from '../../../src/nomad/client.js';
import { createRunnerPools, type RunnerPools, type RunnerPoolsOptions } from '../../../src/runners/pools.js';
import type { PoolProblem } from '../../../src/runners/pools.js';
import { createSupervisor } from '../../../src/supervisor/index.js';
import type { Supervisor } from '../../../src/supervisor/supervisor.js';
import type { WireLayer } from '../../../src/nomad/wire.js';
import type { ActingClusterOptions } from '../../../src/testing/nomad/actingCluster.js';
import { FakeNomad } from '../../../src/testing/fakeNomad.js';
import { QuietDriver, WireTally } from '../../../src/testing/quiet.js';

/** setpriv drops to nobody the way /sbin/setuser drops to `user` in Poseidon's images. */
export const SETUSER = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];

export const START = Date.UTC(2026, 11, 1, 9);

/** A stream's whole text. */
export { streamText as collect } from '../../../src/runners/runner.js';

export interface PoolHarness {
  clock: VirtualClock;
  fake: FakeNomad;
  nomad: NomadClient;
  supervisor: Supervisor;
  pools: RunnerPools;
  problems: PoolProblem[];
  /** Moves the clock by `ms` in steps, letting I/O run between them. */
  drive(ms: number, stepMs?: number): Promise<void>;
  /** Drives until `done()` holds (at most `maxMs` of virtual time); throws if it never does. */
  driveUntil(done: () => boolean, maxMs?: number, stepMs?: number): Promise<void>;
  /** Resolves `promise` while driving the clock. */
  settled<T>(promise: Promise<T>, maxMs?: number): Promise<T>;
  /** A second supervisor and pools over the same fake (a restart): the old ones are stopped first. */
  restart(options?: RunnerPoolsOptions): Promise<void>;
  close(): Promise<void>;
}

async function startSupervisor(fake: FakeNomad, clock: VirtualClock, options: RunnerPoolsOptions, tally: WireTally, inspect?: InspectionObserver, wire?: WireLayer, namespace?: string) {
  // A test's own layer goes outside the tally: a request it holds back is not one the fake has yet to answer.
  const layer: WireLayer = wire === undefined ? tally.layer : (network) => wire(tally.layer(network));
  const nomad = new NomadClient({ address: fake.address, ...(namespace === undefined ? {} : { namespace }) }, { clock, gzip: false, wire: layer });
  const supervisor = createSupervisor({ nomad, clock, ...(inspect ? { inspect } : {}) });
  const pools = createRunnerPools(supervisor, { setuser: SETUSER, ...options });
  return { nomad, supervisor, pools };
}

export async function startPoolHarness(
  options: {
    pools?: RunnerPoolsOptions;
    acting?: ActingClusterOptions;
    start?: number;
    inspect?: InspectionObserver;
    /** Variables every runner's task has (as exec and raw_exec tasks inherit the Nomad agent's). */
    taskEnv?: Readonly<Record<string, string>>;
    /** The Nomad namespace the pools work in (NOMAD_NAMESPACE). */
    namespace?: string;
    /** A layer of the test's own on the client's wire, given the fake (see racingRegister.ts). */
    wire?: (fake: FakeNomad) => WireLayer;
    /** The fake refuses every connection until `fake.faults.clear()`: the pools are not waited for. */
    refuseAtStart?: boolean;
  } = {},
): Promise<PoolHarness> {
  const clock = new VirtualClock({ start: options.start ?? START });
  // Node's stdio pipes are sockets, and bash reads ~/.bashrc when its stdin is one (its rshd rule):
  // a HOME without one keeps the machine's own start-up files out of the runners' shells.
  const fake = await FakeNomad.start({ clock, acting: { gcAfterMs: 10_000, ...options.acting }, exec: { env: { HOME: tmpdir(), ...options.taskEnv } } });
  const problems: PoolProblem[] = [];
  // Time moves only once the fake and the client are quiet, and stands still while a runner's command runs.
  const tally = new WireTally();
  const driver = new QuietDriver(clock);
  driver.add({ server: fake.activity, client: tally });
  const wire = options.wire?.(fake);
  if (options.refuseAtStart === true) fake.faults.refuseConnections();
  let current = await startSupervisor(fake, clock, options.pools ?? {}, tally, options.inspect, wire, options.namespace);
  current.pools.problems$.subscribe((problem) => problems.push(problem));

  const drive = async (ms: number, stepMs = 50): Promise<void> => {
    const until = clock.now() + ms;
    while (clock.now() < until) await driver.advanceTo(Math.min(until, clock.now() + stepMs));
    await settle(10);
  };
  const driveUntil = async (done: () => boolean, maxMs = 30_000, stepMs = 50): Promise<void> => {
    const until = clock.now() + maxMs;
    while (!done()) {
      if (clock.now() >= until) throw new Error(`not reached within ${maxMs} ms of virtual time`);
      await drive(stepMs, stepMs);
    }
  };
  const settled = async <T>(promise: Promise<T>, maxMs = 30_000): Promise<T> => {
    let finished = false;
    const watched = promise.finally(() => {
      finished = true;
    });
    watched.catch(() => undefined);
    await driveUntil(() => finished, maxMs);
    return watched;
  };
  const harness: PoolHarness = {
    clock,
    fake,
    get nomad() {
      return current.nomad;
    },
    get supervisor() {
      return current.supervisor;
    },
    get pools() {
      return current.pools;
    },
    problems,
    drive,
    driveUntil,
    settled,
    restart: async (poolOptions = options.pools ?? {}) => {
      await current.supervisor.stop();
      await current.nomad.close();
      current = await startSupervisor(fake, clock, poolOptions, tally, options.inspect, wire, options.namespace);
      current.pools.problems$.subscribe((problem) => problems.push(problem));
      await settled(current.pools.ready);
    },
    close: async () => {
      await current.supervisor.stop();
      await current.nomad.close();
      await fake.close();
    },
  };
  if (options.refuseAtStart !== true) await settled(current.pools.ready);
  return harness;
}
