/**
 * The whole supervisor against a FakeNomad over loopback, on one VirtualClock: real sockets, the
 * real client, event stream and actors; time moves only when the test drives it.
 */
import { join } from 'node:path';
import { VirtualClock, settle } from '../../../src/clock/index.js';
import { NomadClient } from '../../../src/nomad/client.js';
import { createSupervisor, type SupervisorOptions } from '../../../src/supervisor/index.js';
import type { Supervisor } from '../../../src/supervisor/supervisor.js';
import type { StateChange, SupervisorProblem, VerdictRecord } from '../../../src/supervisor/types.js';
import { FakeNomad, type FakeNomadOptions, type FakeNomadVersion } from '../../../src/testing/fakeNomad.js';
import { formatGoDuration } from '../../../machines/allocationHealthRules.js';
import { nomadRulesFor } from '../../../machines/nomadRules.js';
import { isHeartbeatLine, listScenarios, readScenario, type RecordedLine, type Scenario } from '../../../src/testing/recording.js';
import { liveScenarios, scenarioDir } from '../../health/support/replayScenario.js';
import { QuietDriver, WireTally } from '../../../src/testing/quiet.js';

export const SCENARIOS = join(__dirname, '..', '..', 'fixtures', 'nomad-1.1.2', 'scenarios');

/** Every recorded scenario the replay suites replay: the Nomad 1.1.2 recordings', then the live tier's (`live/<name>`). */
export function replayedScenarios(): string[] {
  return [...listScenarios(SCENARIOS), ...liveScenarios()];
}

export interface Harness {
  clock: VirtualClock;
  fake: FakeNomad;
  supervisor: Supervisor;
  verdicts: VerdictRecord[];
  changes: StateChange[];
  problems: SupervisorProblem[];
  close(): Promise<void>;
}

/**
 * A verdict that only time reaches is emitted this long after its due time (the supervisor's settle
 * window, src/intake/freshness.ts), plus one round of reads.
 */
export const SETTLE_MS = 1_000;

/** Lets sockets and promises run between clock steps; virtual time stands still meanwhile. */
export const flush = (): Promise<void> => settle(20);

/** Quiet drivers of the harnesses' clocks: driveTo moves their time only once their sockets are quiet. */
const drivers = new WeakMap<VirtualClock, QuietDriver>();

/**
 * Moves the clock to `until`: from one due timer to the next once the harness's parts are quiet
 * (a clock of startHarness), else in steps that let I/O run between them.
 */
export async function driveTo(clock: VirtualClock, until: number, stepMs = 250): Promise<void> {
  const driver = drivers.get(clock);
  if (driver !== undefined) return driver.advanceTo(until);
  while (clock.now() < until) {
    await flush();
    const due = clock.nextDue();
    const next = Math.min(until, clock.now() + stepMs, due !== undefined && due > clock.now() ? due : Infinity);
    // Whoever else moves the clock meanwhile (the demo jumps between recordings) may be ahead.
    if (next > clock.now()) clock.advanceTo(next);
  }
  await flush();
}

type HarnessOptions = Omit<SupervisorOptions, 'nomad' | 'clock'>;

/** `options` may be made from the harness's clock (metrics measured on it); `fakeOptions` start the FakeNomad. */
export async function startHarness(
  start: number,
  options: HarnessOptions | ((clock: VirtualClock) => HarnessOptions) = {},
  prepare?: (fake: FakeNomad) => void,
  fakeOptions: Omit<FakeNomadOptions, 'clock'> = {},
): Promise<Harness> {
  const clock = new VirtualClock({ start });
  const fake = await FakeNomad.start({ ...fakeOptions, clock });
  prepare?.(fake);
  const tally = new WireTally();
  const driver = new QuietDriver(clock);
  driver.add({ server: fake.activity, client: tally });
  drivers.set(clock, driver);
  // Without gzip every reply is plain socket I/O; gunzip runs on libuv's thread pool and could
  // finish after virtual time has moved on.
  const nomad = new NomadClient({ address: fake.address }, { clock, gzip: false, wire: tally.layer });
  const supervisor = createSupervisor({ nomad, clock, ...(typeof options === 'function' ? options(clock) : options) });
  const verdicts: VerdictRecord[] = [];
  const changes: StateChange[] = [];
  const problems: SupervisorProblem[] = [];
  supervisor.verdicts$.subscribe((v) => verdicts.push(v));
  supervisor.changes$.subscribe((c) => changes.push(c));
  supervisor.problems$.subscribe((p) => problems.push(p));
  for (let i = 0; i < 50 && supervisor.actor.getSnapshot().value !== 'stopped'; i++) {
    if (JSON.stringify(supervisor.actor.getSnapshot().value) === '{"running":"streaming"}') break;
    await flush();
  }
  return {
    clock,
    fake,
    supervisor,
    verdicts,
    changes,
    problems,
    close: async () => {
      await supervisor.stop();
      await nomad.close();
      await fake.close();
    },
  };
}

/**
 * Releases the supervisor suites run on: the recorded one, one between the rule changes of 1.3–1.5
 * and 1.11 (1.6.3: interpolated names, no sidecar rule yet), and today's.
 */
export const RELEASES: readonly FakeNomadVersion[] = ['1.1.2', '1.6.3', '2.0'];

/** "Task not running by healthy_deadline of 20s" in the words of `version`. */
export function notRunningByDeadline(version: FakeNomadVersion, healthyDeadlineMs: number): string {
  return nomadRulesFor(version === '2.0' ? '2.0.5' : version).rules.healthyDeadlineWording
    ? `Task not running by healthy_deadline of ${formatGoDuration(healthyDeadlineMs)}`
    : 'Task not running by deadline';
}

export { withoutNomadVerdict as stripNomadVerdict } from '../../../src/cli/demoCommand.js';
export { requestedIndex } from '../../../src/testing/recording.js';

export function loadScenario(name: string): Scenario & { opened: number; closed: number } {
  const scenario = readScenario(scenarioDir(name));
  const opened = Date.parse(scenario.meta.stream_opened_at);
  return { ...scenario, opened, closed: opened + Number(scenario.meta.stream_closed_t) };
}

/** The recording split right after the job's registration: a gate starts once the job exists. */
export function splitAfterRegistration(lines: readonly RecordedLine[]): [RecordedLine[], RecordedLine[]] {
  const data = lines.filter((line) => !isHeartbeatLine(line));
  const at = data.findIndex((line) => line.raw.includes('"JobRegistered"') && line.raw.includes('"Topic":"Job"'));
  const t = data[at]!.t;
  return [data.slice(0, at + 1), data.slice(at + 1).map((line) => ({ ...line, t: line.t - t }))];
}
