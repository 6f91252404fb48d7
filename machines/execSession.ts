import { assign, fromCallback, sendTo, setup } from 'xstate';

/**
 * One command run in an allocation over Nomad's exec websocket.
 *
 *   running ─┬─ phase:    connecting ──► open ⟲ heartbeat every 10 s
 *            └─ deadline: (armed ──timeout──►) or unbounded
 *      │
 *      ├──► exited   (final: the `exited` frame, with its exit code)
 *      ├──► failed   (final: the transport's typed error, or the error it threw)
 *      └──► cancelled (final: CANCEL from the owner, or the deadline)
 *
 * The socket is the invoked `transport` actor (provided with `machine.provide`), so the machine stays
 * pure and its timers run on whatever clock the actor was created with. Leaving `running` stops the
 * transport, which ends the remote session.
 */

export interface ExecSessionInput {
  /** The owner's name for the session; its transport finds the session's connection by it. */
  sessionId: string;
  allocId: string;
  task: string;
  command: readonly string[];
  tty: boolean;
  /** Ends the session as `cancelled` (reason `timeout`) if it has not exited by then. */
  timeoutMs?: number;
}

/** What the transport reports to the machine. */
export type ExecTransportEvent =
  | { type: 'TRANSPORT.OPENED' }
  | { type: 'TRANSPORT.EXITED'; exitCode: number }
  | { type: 'TRANSPORT.FAILED'; error: Error };

/** What the machine asks of the transport. */
export type ExecTransportCommand = { type: 'HEARTBEAT' };

export type ExecSessionEvent = ExecTransportEvent | { type: 'CANCEL' };

export type ExecSessionOutcome =
  | { status: 'exited'; exitCode: number }
  | { status: 'failed'; error: Error }
  | { status: 'cancelled'; reason: 'cancelled' | 'timeout' };

export interface ExecSessionContext extends ExecSessionInput {
  outcome: ExecSessionOutcome | undefined;
}

/** Nomad's Go client and UI send `{}` this often (api/allocations_exec.go heartbeatInterval). */
export const EXEC_HEARTBEAT_MS = 10_000;

export const execSessionMachine = setup({
  types: {
    input: {} as ExecSessionInput,
    context: {} as ExecSessionContext,
    events: {} as ExecSessionEvent,
    output: {} as ExecSessionOutcome,
  },
  actors: {
    // Replaced by the owner with a real socket; running without one is a wiring error.
    transport: fromCallback<ExecTransportCommand, ExecSessionInput>(({ sendBack }) => {
      sendBack({ type: 'TRANSPORT.FAILED', error: new Error('execSessionMachine needs a transport actor (machine.provide)') });
    }),
  },
  guards: {
    hasTimeout: ({ context }) => context.timeoutMs !== undefined,
  },
  actions: {
    sendHeartbeat: sendTo('transport', { type: 'HEARTBEAT' }),
    recordExit: assign({
      outcome: ({ context, event }) => (event.type === 'TRANSPORT.EXITED' ? { status: 'exited', exitCode: event.exitCode } : context.outcome),
    }),
    recordFailure: assign({
      outcome: ({ context, event }) => (event.type === 'TRANSPORT.FAILED' ? { status: 'failed', error: event.error } : context.outcome),
    }),
    // A transport that throws ends this session, not its owner (an unhandled child error would).
    recordTransportError: assign((_, params: { error: unknown }) => ({
      outcome: {
        status: 'failed' as const,
        error: params.error instanceof Error ? params.error : new Error(`exec transport failed: ${String(params.error)}`),
      },
    })),
    recordCancel: assign({ outcome: { status: 'cancelled', reason: 'cancelled' } }),
    recordTimeout: assign({ outcome: { status: 'cancelled', reason: 'timeout' } }),
  },
  delays: {
    heartbeat: EXEC_HEARTBEAT_MS,
    timeout: ({ context }) => context.timeoutMs ?? 0,
  },
}).createMachine({
  id: 'execSession',
  context: ({ input }) => ({ ...input, outcome: undefined }),
  initial: 'running',
  states: {
    running: {
      type: 'parallel',
      invoke: {
        id: 'transport',
        src: 'transport',
        // The context is the input plus the outcome.
        input: ({ context: { outcome: _outcome, ...input } }) => input,
        onError: { target: 'failed', actions: { type: 'recordTransportError', params: ({ event }) => ({ error: event.error }) } },
      },
      on: {
        'TRANSPORT.EXITED': { target: 'exited', actions: 'recordExit' },
        'TRANSPORT.FAILED': { target: 'failed', actions: 'recordFailure' },
        CANCEL: { target: 'cancelled', actions: 'recordCancel' },
      },
      states: {
        phase: {
          initial: 'connecting',
          states: {
            connecting: { on: { 'TRANSPORT.OPENED': 'open' } },
            open: {
              after: { heartbeat: { target: 'open', reenter: true, actions: 'sendHeartbeat' } },
            },
          },
        },
        deadline: {
          initial: 'deciding',
          states: {
            deciding: { always: [{ guard: 'hasTimeout', target: 'armed' }, { target: 'unbounded' }] },
            armed: {
              after: { timeout: { target: '#execSession.cancelled', actions: 'recordTimeout' } },
            },
            unbounded: {},
          },
        },
      },
    },
    exited: { type: 'final' },
    failed: { type: 'final' },
    cancelled: { type: 'final' },
  },
  output: ({ context }) => context.outcome ?? { status: 'cancelled', reason: 'cancelled' },
});
