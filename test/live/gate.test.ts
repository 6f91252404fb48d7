/** `warden gate` against the live agent: recorded scenarios' jobs deployed for real, the gate's exit code and lines. */
import { gate, GATE_HEALTHY, GATE_UNHEALTHY } from '../../src/cli/gateCommand.js';
import { liveEnv, registerScenarioJob, uniqueJobId, useLiveJobs } from './support/live.js';

describe('warden gate against a real Nomad', () => {
  const jobs = useLiveJobs();

  test('a healthy deployment: exit 0', async () => {
    const id = jobs.track(uniqueJobId('gate-healthy'));
    await registerScenarioJob(jobs.client, 'healthy_task_states', id);
    const lines: string[] = [];
    const code = await gate(id, { timeout: 120 }, { env: liveEnv(), write: (l) => lines.push(l) });
    expect([code, lines[0]]).toEqual([GATE_HEALTHY, `✔ ${id} version 0: deployment healthy, 2 allocation(s) healthy`]);
  });

  test('a failing deployment: exit 1 with the failed task', async () => {
    const id = jobs.track(uniqueJobId('gate-failing'));
    await registerScenarioJob(jobs.client, 'failed_task', id);
    const lines: string[] = [];
    const code = await gate(id, { timeout: 120 }, { env: liveEnv(), write: (l) => lines.push(l) });
    expect(code).toBe(GATE_UNHEALTHY);
    expect(lines).toContain('    main: Unhealthy because of failed task');
  });
});
