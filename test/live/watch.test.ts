/** `warden watch` against the live agent. */
import { watch } from '../../src/cli/watchCommand.js';
import { liveEnv, registerScenarioJob, uniqueJobId, useLiveJobs } from './support/live.js';

describe('warden watch against a real Nomad', () => {
  const jobs = useLiveJobs();

  test('prints the verdicts of a job registered while it watches', async () => {
    const id = jobs.track(uniqueJobId('watch'));
    const lines: string[] = [];
    const stop = new AbortController();
    const sawVerdicts = new Promise<void>((resolve) => {
      const write = (line: string): void => {
        lines.push(line);
        // Each allocation's move into healthy, not its verdict line: both must be seen.
        if (lines.filter((l) => l.includes(`${id}.app[`) && l.includes('→ healthy')).length === 2) resolve();
      };
      void watch({ jobPrefix: [id] }, { env: liveEnv(), write, signal: stop.signal });
    });
    try {
      await registerScenarioJob(jobs.client, 'healthy_task_states', id);
      await sawVerdicts;
      expect(lines.filter((l) => l.includes(`${id}.app[`) && l.includes('→ healthy'))).toHaveLength(2);
      expect(lines.filter((l) => l.includes(`${id}.app[`) && /\bunhealthy\b/.test(l))).toEqual([]);
    } finally {
      stop.abort();
    }
  });
});
