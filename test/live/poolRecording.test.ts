/**
 * A pool's life in Poseidon's layout on the real agent, with everything the pools read recorded as
 * `warden record` records a command (src/nomad/recording), then replayed at once with no server: the
 * same pool states step by step. WARDEN_LIVE_WRITE_FIXTURES=1 also writes the recording and its
 * states to test/fixtures/nomad-1.1.2/pool-life/, which test/runners/poolLifeReplay.test.ts replays
 * in npm test.
 */
import { randomInt } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../../src/clock/index.js';
import { NomadClient } from '../../src/nomad/client.js';
import { nomadConfigFromEnv } from '../../src/nomad/config.js';
import { recordToFile } from '../../src/nomad/recording/recorder.js';
import { createRunnerPools } from '../../src/runners/pools.js';
import { createSupervisor } from '../../src/supervisor/index.js';
import { liveDriver, runPoolLife, sequentialRunnerIds } from '../runners/support/poolLife.js';
import { replayPoolLife, POOL_LIFE_FIXTURE } from '../runners/support/poolLifeReplay.js';
import { liveAgents } from './support/live.js';
import { liveNamespace } from './support/namespace.js';

test('a pool life recorded on the real agent replays to the same states, step by step', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'warden-pool-life-'));
  const file = join(dir, 'recording.ndjson');
  const environmentId = randomInt(600_000, 699_999);
  const namespace = liveNamespace('warden-pool-life');
  await namespace.create();
  const { recorder, close } = recordToFile(file, {
    clock: systemClock,
    command: { name: 'pools', options: { environmentId } },
    env: { NOMAD_ADDR: liveAgents().nomad, NOMAD_NAMESPACE: namespace.name },
  });
  const nomad = new NomadClient(nomadConfigFromEnv(namespace.liveEnv()), { clock: systemClock, wire: recorder.layer });
  const supervisor = createSupervisor({ nomad, clock: systemClock, random: recorder.random });
  const pools = createRunnerPools(supervisor, { shell: '/bin/sh', newRunnerId: sequentialRunnerIds() });
  let life;
  try {
    await pools.ready;
    life = await runPoolLife(pools, environmentId, liveDriver(pools, () => systemClock.now()));
  } finally {
    await pools.deleteEnvironment(environmentId).catch(() => undefined);
    await supervisor.stop();
    await nomad.close();
    await close();
    await namespace.remove();
  }
  try {
    expect(life.steps.map((s) => s.state.runners)).toHaveLength(5);
    expect(life.steps.at(-1)?.state).toEqual({ idle: 0, used: 0, provisioning: 0, runners: {} });
    const replayed = await replayPoolLife(readFileSync(file, 'utf8'), life);
    expect(replayed.steps.map((s) => [s.name, s.state])).toEqual(life.steps.map((s) => [s.name, s.state]));
    if (process.env.WARDEN_LIVE_WRITE_FIXTURES === '1') {
      copyFileSync(file, join(POOL_LIFE_FIXTURE, 'recording.ndjson'));
      writeFileSync(join(POOL_LIFE_FIXTURE, 'life.json'), `${JSON.stringify(life, null, 2)}\n`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
