/**
 * A recorded pool life (poolLife.ts) played back: the pools over a ReplayWire of the recording, on a
 * VirtualClock that starts at the recording's start, each step begun when it began live.
 */
import { join } from 'node:path';
import { VirtualClock } from '../../../src/clock/index.js';
import { NomadClient } from '../../../src/nomad/client.js';
import { parseTrafficRecording } from '../../../src/nomad/recording/format.js';
import { ReplayWire } from '../../../src/nomad/recording/replayWire.js';
import { createRunnerPools } from '../../../src/runners/pools.js';
import { createSupervisor } from '../../../src/supervisor/index.js';
import { replayDriver, runPoolLife, sequentialRunnerIds, type PoolLife } from './poolLife.js';

/** Where the recording made on the real agent is kept (its README says how it was made). */
export const POOL_LIFE_FIXTURE = join(import.meta.dirname, '..', '..', 'fixtures', 'nomad-1.1.2', 'pool-life');

export async function replayPoolLife(text: string, recorded: PoolLife): Promise<PoolLife & { misses: string[] }> {
  const recording = parseTrafficRecording(text);
  const clock = new VirtualClock({ start: recording.header.start });
  const wire = new ReplayWire(recording, clock);
  const { NOMAD_ADDR: address = 'http://127.0.0.1:4646', NOMAD_NAMESPACE: namespace } = recording.header.env;
  const nomad = new NomadClient({ address, ...(namespace === undefined ? {} : { namespace }) }, { clock, wire: wire.layer });
  const supervisor = createSupervisor({ nomad, clock, random: wire.random });
  const pools = createRunnerPools(supervisor, { shell: '/bin/sh', newRunnerId: sequentialRunnerIds() });
  const driver = replayDriver(clock, recording.header.start, recording.endsAt);
  try {
    await driver.settled(pools.ready);
    const life = await runPoolLife(pools, recorded.environmentId, driver, recorded);
    return { ...life, misses: [...wire.misses] };
  } finally {
    await supervisor.stop();
    await nomad.close();
  }
}
