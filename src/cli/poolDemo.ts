/**
 * The runner pools part of `warden demo`: a second FakeNomad, acting as a cluster by itself, and a
 * supervisor with runner pools over it. An environment with a warm pool of 3 raw_exec runners is
 * created in Poseidon's layout; one runner is claimed at once from the pool, runs a command (a real
 * process in the runner's own directory), has a file written and listed; then it is left alone
 * until its inactivity timeout destroys it, and the pool is shown refilling.
 *
 * It runs on the demo's clock, under the demo's quiet driver: time does not move while a command
 * runs (the fake's running commands keep it busy), so a command's real run time never counts as
 * the runner's inactivity, however fast the demo goes.
 */
import { tmpdir } from 'node:os';
import type { VirtualClock } from '../clock/index.js';
import type { InspectionModel } from '../inspect/model.js';
import { NomadClient } from '../nomad/client.js';
import { createRunnerPools } from '../runners/pools.js';
import { streamText } from '../runners/runner.js';
import { createSupervisor } from '../supervisor/index.js';
import { paint, type DescribeOptions } from '../supervisor/describe.js';
import { FakeNomad } from '../testing/fakeNomad.js';
import { WireTally, type QuietDriver } from '../testing/quiet.js';
import { errorMessage } from '../errorMessage.js';

export interface PoolDemoIo {
  write(line: string): void;
  clock: VirtualClock;
  /** The demo's driver: the pool's cluster and client are added to what it waits for. */
  driver: QuietDriver;
  style: DescribeOptions;
  /** The demo's inspector, to show the pools in. */
  model?: InspectionModel;
}

const ENVIRONMENT = 1;
const POOL_SIZE = 3;
const INACTIVITY_S = 10;

export async function runPoolDemo(io: PoolDemoIo): Promise<void> {
  const { style } = io;
  const { clock } = io;
  const say = (line: string): void => io.write(`  ${line}`);
  // A HOME of its own: the runners' shells do not read this machine's start-up files.
  const fake = await FakeNomad.start({ clock, acting: true, exec: { env: { HOME: tmpdir() } } });
  const tally = new WireTally();
  const leave = io.driver.add({ server: fake.activity, client: tally });
  const nomad = new NomadClient({ address: fake.address }, { clock, gzip: false, wire: tally.layer });
  const supervisor = createSupervisor({ nomad, clock });
  const pools = createRunnerPools(supervisor, { shell: '/bin/sh' });
  const detach = io.model?.attachPools(pools);
  /** Resolves once `done()` holds, checked as the pools change. */
  const when = (done: () => boolean): Promise<void> =>
    new Promise((resolve) => {
      if (done()) return resolve();
      const watching = pools.changes$.subscribe(() => {
        if (!done()) return;
        watching.unsubscribe();
        resolve();
      });
    });
  let shown = '';
  // The pool's state is told as it changes, except while the runner works: those lines would fall
  // between the command's at whatever moment the real processes allow; the state is told after.
  let telling = true;
  const tell = (): void => {
    const environment = pools.environment(ENVIRONMENT);
    if (!telling || environment === undefined) return;
    const line = `pool: ${environment.idleRunners}/${environment.spec.prewarmingPoolSize} idle, ${environment.usedRunners} used${environment.provisioningRunners > 0 ? `, ${environment.provisioningRunners} starting` : ''}`;
    if (line === shown) return;
    shown = line;
    say(paint(line, 'dim', style));
  };
  const subscription = pools.changes$.subscribe(tell);
  try {
    io.write('');
    io.write(`${paint('▶ Runner pools: warm runners for a code-execution service', 'bold', style)}  ${paint(`(Poseidon's layout, on a FakeNomad at ${fake.address} acting as a cluster)`, 'dim', style)}`);
    await pools.ready;
    await pools.putEnvironment({ id: ENVIRONMENT, prewarmingPoolSize: POOL_SIZE, driver: 'raw_exec' });
    say(`environment ${ENVIRONMENT} registered as job template-${ENVIRONMENT}; its runners are jobs ${ENVIRONMENT}-<uuid>`);
    await when(() => pools.environment(ENVIRONMENT)?.idleRunners === POOL_SIZE);

    const runner = pools.claim(ENVIRONMENT, { inactivityTimeoutS: INACTIVITY_S });
    say(`claimed ${paint(runner.id, 'note', style)} at once from the warm pool (marked used in its job's meta behind the scenes; inactivity timeout ${INACTIVITY_S} s)`);
    // A real process, in the task directory of the runner's own allocation.
    telling = false;
    const command = 'echo "hello from $(basename "$(dirname "$PWD")")"; uname -s';
    try {
      const execution = runner.execute({ command, privileged: true, timeLimitS: 10 });
      const [stdout, outcome] = await Promise.all([streamText(execution.stdout), execution.outcome]);
      say(`$ ${command}`);
      for (const line of stdout.trimEnd().split('\n')) say(`  ${line}`);
      say(paint(outcome.status === 'exited' ? `exit code ${outcome.exitCode}` : `ended: ${outcome.status}`, 'dim', style));
      await runner.updateFiles({ copy: [{ path: 'hello.py', content: 'print("hello, runner")\n' }] });
      const files = await runner.listFiles({ privileged: true });
      say('wrote hello.py (a tar archive streamed into the runner); its files now:');
      for (const file of files) say(`  ${file.entryType}${file.permissions} ${file.owner} ${String(file.size).padStart(4)} B  ${file.name}`);
    } catch (error) {
      say(paint(`the runner went before its work was done: ${errorMessage(error)}`, 'bad', style));
    }

    // Meanwhile the pool replaced the claimed runner: told once the replacement is up.
    await when(() => pools.environment(ENVIRONMENT)?.idleRunners === POOL_SIZE);
    telling = true;
    tell();
    say(`left alone: in ${INACTIVITY_S} s of inactivity the runner is destroyed and its job purged`);
    await when(() => runner.state === 'destroyed');
    say(`${paint(runner.id, 'note', style)} destroyed: runner inactivity timeout exceeded`);
    await when(() => pools.environment(ENVIRONMENT)?.idleRunners === POOL_SIZE && pools.environment(ENVIRONMENT)?.usedRunners === 0);
    say(`the pool is full again: ${POOL_SIZE} idle runners, ready to be claimed`);
  } finally {
    subscription.unsubscribe();
    detach?.();
    await supervisor.stop();
    await nomad.close();
    await fake.close();
    leave();
  }
}
