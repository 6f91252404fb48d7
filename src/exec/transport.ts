import { fromCallback } from 'xstate';
import type { ExecSessionInput, ExecTransportCommand } from '../../machines/execSession.js';
import type { ExecConnection } from '../nomad/exec/connection.js';

/**
 * The session machine's `transport` actor for one ExecConnection: connects when the machine starts
 * it, relays heartbeats, and ends the remote session when the machine stops it (cancel, timeout).
 */
export function connectionTransport(connection: ExecConnection) {
  return fromCallback<ExecTransportCommand, ExecSessionInput>(({ sendBack, receive }) => {
    connection.connect({
      opened: () => sendBack({ type: 'TRANSPORT.OPENED' }),
      exited: (exitCode) => sendBack({ type: 'TRANSPORT.EXITED', exitCode }),
      failed: (error) => sendBack({ type: 'TRANSPORT.FAILED', error }),
    });
    receive(() => connection.heartbeat());
    return () => connection.close();
  });
}
