/**
 * `warden gate` started before, during and after each recorded deployment (FakeNomad over loopback,
 * the recording replayed with Nomad's allocation verdicts stripped, Nomad's deployment statuses
 * kept): the same exit code and the same words every time, and never a contradiction of the
 * deployment's own final status in Nomad.
 */
import { gate, GATE_HEALTHY, GATE_UNHEALTHY } from '../../src/cli/gateCommand.js';
import { VirtualClock } from '../../src/clock/index.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { isHeartbeatLine, type RecordedLine } from '../../src/testing/recording.js';
import { parseLossless } from '../../src/testing/losslessJson.js';
import { driveTo, flush, loadScenario, requestedIndex, stripNomadVerdict } from '../supervisor/support/harness.js';

interface DeploymentLine {
  readonly index: number;
  readonly status: string;
}

/** Which data lines carry the job's registration of `version`, and its deployment's status updates. */
function landmarks(lines: readonly RecordedLine[], jobId: string, version: number) {
  let registered = -1;
  const statuses: DeploymentLine[] = [];
  lines.forEach((line, index) => {
    const batch = parseLossless(line.raw) as unknown as { Events?: { Topic: string; Type: string; Payload: Record<string, { ID?: string; JobID?: string; JobVersion?: number; Version?: number; Status?: string }> }[] };
    for (const event of batch.Events ?? []) {
      const job = event.Payload.Job;
      if (event.Topic === 'Job' && event.Type === 'JobRegistered' && job?.ID === jobId && job.Version === version && registered < 0) registered = index;
      const deployment = event.Payload.Deployment;
      if (event.Topic === 'Deployment' && deployment?.JobID === jobId && deployment.JobVersion === version) statuses.push({ index, status: deployment.Status as string });
    }
  });
  const ended = statuses.find((line) => ['successful', 'failed', 'cancelled'].includes(line.status));
  // Nomad 1.1.2 publishes a purge only as a JobDeregistered evaluation (no Job event).
  const purged = lines.findIndex((line) => line.raw.includes('"Topic":"Evaluation"') && line.raw.includes('"JobDeregistered"') && !line.raw.includes('"Topic":"Job"'));
  return { registered, firstDeployment: statuses[0]?.index, ended, purged };
}

/** The gate for `version`, started right after data line `startAfter` (what came before already happened). */
async function gateFrom(name: string, version: number, startAfter: number) {
  const scenario = loadScenario(name);
  const data = scenario.stream.filter((line) => !isHeartbeatLine(line));
  const startT = (data[startAfter] as RecordedLine).t;
  const clock = new VirtualClock({ start: scenario.opened + startT });
  const fake = await FakeNomad.start({ clock });
  fake.replay(data.slice(0, startAfter + 1), { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario), immediate: true });
  const lines: string[] = [];
  let exitCode: number | undefined;
  const io = { env: { NOMAD_ADDR: fake.address }, write: (text: string) => lines.push(text), clock, transport: { gzip: false } };
  const running = gate(scenario.meta.job_id, { version, timeout: 120 }, io).then((code) => (exitCode = code));
  await flush();
  fake.replay(data.slice(startAfter + 1).map((line) => ({ ...line, t: line.t - startT })), { transform: stripNomadVerdict });
  for (let t = clock.now(); exitCode === undefined && t < scenario.closed + 120_000; t += 1_000) await driveTo(clock, t);
  await running;
  await fake.close();
  return { exitCode, lines };
}

const DEPLOYMENTS: readonly (readonly [string, number, number])[] = [
  // scenario, version, the exit code Nomad's final status means
  ['healthy_task_states', 0, GATE_HEALTHY],
  ['failed_task', 0, GATE_UNHEALTHY],
  ['restart_before_min_healthy', 0, GATE_UNHEALTHY],
  ['deadline_not_running', 0, GATE_UNHEALTHY],
  ['stopped_while_waiting', 0, GATE_UNHEALTHY],
  ['placement_failure', 0, GATE_UNHEALTHY],
  ['rolling_update', 0, GATE_HEALTHY],
  ['rolling_update', 1, GATE_HEALTHY],
  ['prestart_sidecar_lifecycle', 0, GATE_UNHEALTHY],
  ['manual_health', 0, GATE_UNHEALTHY],
  ['many_allocs', 0, GATE_HEALTHY],
];

describe('a gate started before, during or after the deployment says the same', () => {
  test.each(DEPLOYMENTS)('%s version %i', async (name, version, nomadSays) => {
    const scenario = loadScenario(name);
    const data = scenario.stream.filter((line) => !isHeartbeatLine(line));
    const { registered, firstDeployment, ended, purged } = landmarks(data, scenario.meta.job_id, version);
    expect(ended).toBeDefined();
    const during = data.findIndex((line) => line.t >= ((data[firstDeployment as number] as RecordedLine).t + (data[ended!.index] as RecordedLine).t) / 2);
    const before = await gateFrom(name, version, registered);
    expect(before.exitCode).toBe(nomadSays);
    expect(await gateFrom(name, version, Math.max(registered, during - 1))).toEqual(before);
    // After a purge Nomad no longer knows the job (placement_failure's deployment ends with its purge): nothing to gate then.
    if (purged < 0 || ended!.index < purged) expect(await gateFrom(name, version, ended!.index)).toEqual(before);
    // Nomad's own words for how it ended come first.
    if (nomadSays === GATE_UNHEALTHY) expect(before.lines[0]).toContain(`Deployment ${ended!.status}`);
  });

  test('a batch job: nothing to judge, the same before and after it ran', async () => {
    const scenario = loadScenario('batch_job');
    const data = scenario.stream.filter((line) => !isHeartbeatLine(line));
    const { registered, purged } = landmarks(data, scenario.meta.job_id, 0);
    const before = await gateFrom('batch_job', 0, registered);
    const after = await gateFrom('batch_job', 0, purged - 1);
    expect(before).toEqual({ exitCode: GATE_UNHEALTHY, lines: ['✘ batch-job version 0: no deployment to judge: Nomad runs no deployments for batch jobs'] });
    expect(after).toEqual(before);
  });
});
