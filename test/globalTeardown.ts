/**
 * After every test, the test process must be able to end. Anything a test left running (a server, a
 * command on a terminal) would keep it alive until CI's own time limit; instead this names what is
 * left and fails the run. The timer is unref'd: a process with nothing left ends before it fires.
 */
const GRACE_MS = 15_000;

export default function globalTeardown(): void {
  setTimeout(() => {
    console.error(`The tests ended but left this running, which keeps the process alive: ${process.getActiveResourcesInfo().join(', ')}`);
    process.exit(1);
  }, GRACE_MS).unref();
}
