/** `warden gate` reads CONSUL_HTTP_ADDR / CONSUL_HTTP_TOKEN and judges a check-based deployment from Consul. */
import { gate, GATE_HEALTHY } from '../../src/cli/gateCommand.js';
import { VirtualClock } from '../../src/clock/index.js';
import { FakeConsul } from '../../src/testing/fakeConsul.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { driveTo, flush } from '../supervisor/support/harness.js';
import { checkedJob } from './harness.js';

const START = Date.UTC(2026, 10, 29, 20, 30);
const TOKEN = 'consul-acl-5b1e7d';

async function gateWith(env: Record<string, string>, consul: FakeConsul, nomad: FakeNomad, clock: VirtualClock) {
  nomad.cluster.registerJob(checkedJob('web', [{ name: 'web', checks: [{ name: 'alive' }] }], { count: 2 }));
  const lines: string[] = [];
  let exitCode: number | undefined;
  const running = gate('web', {}, { env: { NOMAD_ADDR: nomad.address, ...env }, write: (line) => lines.push(line), clock, transport: { gzip: false } }).then((code) => (exitCode = code));
  await flush();
  const placed = nomad.cluster.placeAllocations('web');
  for (const alloc of placed) {
    nomad.cluster.startTask(alloc.ID);
    consul.registerService({ allocId: alloc.ID, task: 'main', service: 'web', checks: [{ name: 'alive', status: 'passing' }] });
  }
  // Nomad's deployment watcher (with its own Consul) ends the deployment a moment after min_healthy_time.
  await driveTo(clock, START + 3_000);
  nomad.cluster.setDeploymentStatus(placed[0]!.DeploymentID!, 'successful');
  for (let t = START + 4_000; exitCode === undefined && t < START + 60_000; t += 1_000) await driveTo(clock, t);
  await running;
  return { exitCode, lines };
}

describe('warden gate with Consul', () => {
  let clock: VirtualClock;
  let nomad: FakeNomad;
  let consul: FakeConsul;
  beforeEach(async () => {
    clock = new VirtualClock({ start: START });
    nomad = await FakeNomad.start({ clock });
    consul = await FakeConsul.start({ clock, token: TOKEN });
  });
  afterEach(async () => {
    await consul.close();
    await nomad.close();
  });

  test('CONSUL_HTTP_ADDR and CONSUL_HTTP_TOKEN set: the checks are read and the deployment is healthy', async () => {
    const { exitCode, lines } = await gateWith({ CONSUL_HTTP_ADDR: consul.address, CONSUL_HTTP_TOKEN: TOKEN }, consul, nomad, clock);
    expect(lines).toEqual(['✔ web version 0: deployment healthy, 2 allocation(s) healthy']);
    expect(exitCode).toBe(GATE_HEALTHY);
    expect(consul.stats.requests).toBeGreaterThan(0);
  });

  test('without CONSUL_HTTP_ADDR the check-based group is not judged: the gate reports Nomad\'s end, and says why Warden judged none', async () => {
    const { exitCode, lines } = await gateWith({}, consul, nomad, clock);
    expect(exitCode).toBe(GATE_HEALTHY);
    expect(lines[0]).toBe('✔ web version 0: deployment healthy, 0 allocation(s) healthy');
    expect(lines[1]).toMatch(/^ {2}2 allocation\(s\) not judged by Warden: .*need a Consul source/);
    expect(consul.stats.requests).toBe(0);
  });
});
