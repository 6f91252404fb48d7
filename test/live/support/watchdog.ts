/**
 * The live tier's watchdog: a process of its own, started by the runner, that waits for the runner
 * to end and then ends the agents, what they left, and their data dirs. A runner that ends normally
 * does that itself and then stops the watchdog; one killed (SIGKILL, a CI timeout) leaves it to this.
 * What to clean comes in WARDEN_LIVE_WATCHDOG (JSON), not on the command line, so that the search
 * for left-over processes by data dir never finds the watchdog.
 */
import { cleanUpAfter, isRunning, type CleanUp } from './cleanup.js';

const runner = Number(process.argv[2]);
const what = JSON.parse(process.env.WARDEN_LIVE_WATCHDOG ?? '{}') as CleanUp;

const timer = setInterval(() => {
  if (isRunning(runner)) return;
  clearInterval(timer);
  void cleanUpAfter(what).finally(() => process.exit(0));
}, 500);
