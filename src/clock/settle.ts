/**
 * Lets real I/O callbacks and promise continuations run: `turns` trips through the event loop's
 * check phase. Virtual time does not move. Tests that drive sockets on a VirtualClock call this
 * between advances; it never waits on the wall clock.
 */
export async function settle(turns = 1): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
