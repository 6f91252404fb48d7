import { fromCallback } from 'xstate';
import type { ExecSessionInput, ExecTransportCommand } from '../../machines/execSession.js';
import type { ExecConnection } from '../nomad/exec/connection.js';
import { ExecError } from '../nomad/exec/errors.js';
import { errorMessage } from '../errorMessage.js';

/**
 * The session machine's `transport` actor: runs the connection its owner built for the session
 * (found by session id), connects when the machine starts it, relays heartbeats, and ends the remote
 * session when the machine stops it (cancel, timeout, its owner stopping).
 */
export function connectionTransport(take: (sessionId: string) => ExecConnection | undefined) {
  return fromCallback<ExecTransportCommand, ExecSessionInput>(({ input, sendBack, receive }) => {
    let running = true;
    const connection = take(input.sessionId);
    try {
      if (connection === undefined) throw new Error(`session ${input.sessionId} was not opened by its owner`);
      connection.connect({
        opened: () => sendBack({ type: 'TRANSPORT.OPENED' }),
        exited: (exitCode) => sendBack({ type: 'TRANSPORT.EXITED', exitCode }),
        failed: (error) => sendBack({ type: 'TRANSPORT.FAILED', error }),
      });
    } catch (cause) {
      const error = new ExecError(`exec could not connect: ${errorMessage(cause)}`);
      // Reported after start, as a socket's failures are: whoever spawned the session gets its actor first.
      queueMicrotask(() => running && sendBack({ type: 'TRANSPORT.FAILED', error }));
    }
    receive(() => connection?.heartbeat());
    return () => {
      running = false;
      connection?.close();
    };
  });
}
