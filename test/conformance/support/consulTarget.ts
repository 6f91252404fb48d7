/**
 * What a Consul conformance suite runs against: FakeConsul on a VirtualClock in `npm test`, a real
 * Consul dev agent of its own in the live tier (WARDEN_LIVE_CONSUL_BIN set by test/live/run.ts).
 * The suite's own agent, not the tier's: Nomad's client deregisters every `_nomad-…` service it did
 * not register itself, and the suite registers services under Nomad's IDs.
 */
import { VirtualClock, settle, systemClock, type Clock } from '../../../src/clock/index.js';
import { FakeConsul } from '../../../src/testing/fakeConsul.js';
import { startConsul, type Agent } from '../../live/support/agents.js';

export interface ConsulTarget {
  /** 'fake' in npm test, 'consul' against the real agent. */
  readonly kind: 'fake' | 'consul';
  readonly address: string;
  /** The clock the target's time runs on (blocking waits, a client's time limits). */
  readonly clock: Clock;
  /**
   * Lets `ms` pass for what is waiting on the target: the fake's clock is advanced (with the
   * sockets let through before and after); a real agent's time passes by itself while the test awaits.
   */
  elapse(ms: number): Promise<void>;
  close(): Promise<void>;
}

const START = Date.UTC(2026, 11, 1, 12);

export async function consulTarget(options: { token?: string } = {}): Promise<ConsulTarget> {
  const binary = process.env.WARDEN_LIVE_CONSUL_BIN;
  if (binary !== undefined && binary !== '') {
    const acl = options.token === undefined ? [] : [`acl {\n  enabled = true\n  default_policy = "deny"\n  tokens { master = "${options.token}" }\n}`];
    const agent: Agent = await startConsul({ binary, hcl: acl });
    return { kind: 'consul', address: agent.address, clock: systemClock, elapse: () => Promise.resolve(), close: () => agent.stop() };
  }
  const clock = new VirtualClock({ start: START });
  const consul = await FakeConsul.start({ clock, node: 'fake-consul', ...(options.token === undefined ? {} : { token: options.token }) });
  return {
    kind: 'fake',
    address: consul.address,
    clock,
    elapse: async (ms) => {
      await settle(20);
      clock.advance(ms);
      await settle(20);
    },
    close: () => consul.close(),
  };
}
