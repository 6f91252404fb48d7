/**
 * Exec sessions run by the supervisor: child actors of the supervisor actor (`exec:<sessionId>`)
 * over FakeNomad's exec endpoint (real local processes), with the supervisor's own Nomad
 * configuration, ACL token included; stop() and AbortSignals end them and leave no process behind.
 */
import { createActor, fromCallback, type InspectedSnapshotEvent, type InspectionEvent } from 'xstate';
import { VirtualClock, settle } from '../../src/clock/index.js';
import { runCommand } from '../../src/exec/runCommand.js';
import type { ExecSession } from '../../src/exec/sessions.js';
import { ExecAbortedError, ExecAllocationNotFoundError, ExecTimeoutError } from '../../src/nomad/exec/errors.js';
import { createSupervisor, SupervisorStoppedError, type Supervisor } from '../../src/supervisor/index.js';
import type { FakeExec } from '../../src/testing/fakeExec/attachFakeExec.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { execSessionMachine, type ExecSessionInput, type ExecTransportCommand } from '../../machines/execSession.js';
import { execActorId, supervisorMachine } from '../../machines/supervisor.js';
import { EXEC_TARGET_JOB, Recorder, collect, survivorsInGroup, opened } from '../exec/harness.js';

const TOKEN = 'exec-acl-token-7f3a';
/** setpriv drops to nobody the way /sbin/setuser drops to `user` in Poseidon's images. */
const SETUSER = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];

interface World {
  clock: VirtualClock;
  fake: FakeNomad;
  execs: FakeExec;
  supervisor: Supervisor;
  allocId: string;
  inspected: InspectionEvent[];
}

let w: World;
beforeEach(async () => {
  const clock = new VirtualClock();
  const fake = await FakeNomad.start({ clock, token: TOKEN });
  fake.cluster.registerJob(EXEC_TARGET_JOB);
  const [allocation] = fake.cluster.placeAllocations(EXEC_TARGET_JOB.ID);
  fake.cluster.startTask(String(allocation?.ID));
  const inspected: InspectionEvent[] = [];
  const supervisor = createSupervisor({ nomad: { address: fake.address, token: TOKEN }, clock, inspect: (event) => inspected.push(event) });
  w = { clock, fake, execs: fake.exec as FakeExec, supervisor, allocId: String(allocation?.ID), inspected };
});
afterEach(async () => {
  await w.supervisor.stop();
  await w.fake.close();
});

const sessionIdOf = (session: ExecSession): string => session.actor.getSnapshot().context.sessionId;
/** Ids of the supervisor actor's exec children, from its snapshot. */
const execChildren = (): string[] => Object.keys(w.supervisor.actor.getSnapshot().children).filter((id) => id.startsWith('exec:'));
const supervisorStatus = (): string => w.supervisor.actor.getSnapshot().status;

describe('supervisor.exec', () => {
  test('a session is a child of the supervisor actor while it runs, connecting then open, and leaves when the command exits', async () => {
    const session = w.supervisor.exec(w.allocId, {
      task: 'main',
      command: ['/bin/sh', '-c', 'read line; echo "got $line"; echo oops >&2; exit 3'],
      stdin: 'pipe',
    });
    const id = execActorId(sessionIdOf(session));
    expect(session.actor.id).toBe(id);
    expect(w.supervisor.actor.getSnapshot().children[id]).toBe(session.actor);
    expect(w.supervisor.actor.getSnapshot().context.execSessions).toEqual([sessionIdOf(session)]);
    expect(session.actor.getSnapshot().value).toEqual({ running: { phase: 'connecting', deadline: 'unbounded' } });

    await opened(session);
    expect(w.supervisor.actor.getSnapshot().children[id]?.getSnapshot().value).toEqual({ running: { phase: 'open', deadline: 'unbounded' } });
    session.stdin.end('hello\n');
    const [stdout, stderr, code] = await Promise.all([collect(session.stdout), collect(session.stderr), session.exitCode]);
    expect([stdout.toString(), stderr.toString(), code]).toEqual(['got hello\n', 'oops\n', 3]);

    expect(session.actor.getSnapshot().value).toBe('exited');
    expect(execChildren()).toEqual([]);
    expect(w.supervisor.actor.getSnapshot().context.execSessions).toEqual([]);
    expect(supervisorStatus()).toBe('active');
  });

  test("the supervisor's inspector sees the session's states, and never the token", async () => {
    const session = w.supervisor.exec(w.allocId, { task: 'main', command: ['true'] });
    await expect(session.exitCode).resolves.toBe(0);
    const seen = w.inspected.filter((event): event is InspectedSnapshotEvent => event.type === '@xstate.snapshot' && event.actorRef === session.actor);
    const values = seen.map((event) => JSON.stringify((event.snapshot as ReturnType<ExecSession['actor']['getSnapshot']>).value));
    expect(values).toContain(JSON.stringify({ running: { phase: 'open', deadline: 'unbounded' } }));
    expect(values.at(-1)).toBe('"exited"');
    expect(JSON.stringify(seen.map((event) => event.snapshot))).not.toContain(TOKEN);
  });

  test('several sessions run at once, each its own child with its own output', async () => {
    const sessions = [0, 1, 2, 3].map((n) =>
      w.supervisor.exec(w.allocId, { task: 'main', command: ['/bin/sh', '-c', `read x; echo "session ${n}: $x"`], stdin: 'pipe' }),
    );
    await Promise.all(sessions.map(opened));
    expect(execChildren().sort()).toEqual(sessions.map((s) => execActorId(sessionIdOf(s))).sort());
    // Answered in reverse order: no session waits for another.
    for (const [n, session] of [...sessions.entries()].reverse()) session.stdin.end(`line ${n}\n`);
    const results = await Promise.all(sessions.map(async (s) => [(await collect(s.stdout)).toString(), await s.exitCode]));
    expect(results).toEqual(sessions.map((_, n) => [`session ${n}: line ${n}\n`, 0]));
    expect(execChildren()).toEqual([]);
  });

  test('stop() ends a running session: its exitCode rejects with SupervisorStoppedError, its streams end, no process is left', async () => {
    const session = w.supervisor.exec(w.allocId, { task: 'main', command: ['/bin/sh', '-c', 'echo started; sleep 1000 & sleep 1000; wait'] });
    await new Recorder(session.stdout).waitFor('started');
    const [pid] = [...w.execs.running];
    expect(pid).toBeDefined();

    await w.supervisor.stop();
    await expect(session.exitCode).rejects.toBeInstanceOf(SupervisorStoppedError);
    expect(session.actor.getSnapshot().status).toBe('stopped');
    await collect(session.stderr);
    expect(supervisorStatus()).toBe('done');
    await w.execs.idle();
    expect(await survivorsInGroup(pid ?? 0)).toEqual([]);
    expect(() => w.supervisor.exec(w.allocId, { task: 'main', command: ['true'] })).toThrow(SupervisorStoppedError);
  });

  test('an AbortSignal cancels one session (ExecAbortedError), which leaves the children; the others and the supervisor go on', async () => {
    const controller = new AbortController();
    const doomed = w.supervisor.exec(w.allocId, { task: 'main', command: ['/bin/sh', '-c', 'echo "pid $$."; exec sleep 1000'], signal: controller.signal });
    const other = w.supervisor.exec(w.allocId, { task: 'main', command: ['/bin/sh', '-c', 'read x; echo "$x"'], stdin: 'pipe' });
    const output = new Recorder(doomed.stdout);
    await output.waitFor('.');
    await opened(other);
    const pid = Number(/pid (\d+)\./.exec(output.text)?.[1]);
    expect(w.execs.running).toContain(pid);

    controller.abort();
    await expect(doomed.exitCode).rejects.toBeInstanceOf(ExecAbortedError);
    expect(doomed.actor.getSnapshot().value).toBe('cancelled');
    expect(execChildren()).toEqual([execActorId(sessionIdOf(other))]);
    for (let turn = 0; turn < 2_000 && w.execs.running.has(pid); turn++) await settle(10);
    expect([...w.execs.running]).toHaveLength(1);
    expect(await survivorsInGroup(pid)).toEqual([]);

    other.stdin.end('still here\n');
    await expect(Promise.all([collect(other.stdout).then(String), other.exitCode])).resolves.toEqual(['still here\n', 0]);
    expect(supervisorStatus()).toBe('active');
  });

  test("timeoutMs runs on the supervisor's clock: nothing happens until virtual time reaches it", async () => {
    const session = w.supervisor.exec(w.allocId, { task: 'main', command: ['/bin/sh', '-c', 'echo "pid $$."; exec sleep 1000'], timeoutMs: 30_000 });
    const output = new Recorder(session.stdout);
    await output.waitFor('.');
    const pid = Number(/pid (\d+)\./.exec(output.text)?.[1]);
    w.clock.advance(29_999);
    await settle(20);
    expect(session.actor.getSnapshot().value).toEqual({ running: { phase: 'open', deadline: 'armed' } });
    w.clock.advance(1);
    await expect(session.exitCode).rejects.toBeInstanceOf(ExecTimeoutError);
    expect(execChildren()).toEqual([]);
    await w.execs.idle();
    expect(await survivorsInGroup(pid)).toEqual([]);
  });

  test('an already aborted signal ends the session before it runs anything', async () => {
    const session = w.supervisor.exec(w.allocId, { task: 'main', command: ['true'], signal: AbortSignal.abort() });
    await expect(session.exitCode).rejects.toBeInstanceOf(ExecAbortedError);
    expect(execChildren()).toEqual([]);
    await expect(collect(session.stdout)).resolves.toHaveLength(0);
  });

  test("Nomad's refusal fails that session with its typed error; the supervisor keeps running", async () => {
    const session = w.supervisor.exec('00000000-0000-0000-0000-000000000000', { task: 'main', command: ['true'] });
    await expect(session.exitCode).rejects.toBeInstanceOf(ExecAllocationNotFoundError);
    expect(session.actor.getSnapshot().value).toBe('failed');
    expect(execChildren()).toEqual([]);
    expect(supervisorStatus()).toBe('active');
  });

  test('the execution options go through the supervisor as through a client: unprivileged, no NOMAD_*, stderr apart under a tty', async () => {
    const session = runCommand(w.supervisor, w.allocId, {
      task: 'main',
      command: ['/bin/sh', '-c', 'read x; echo "out $x"; echo "err $x" >&2; env | grep -c "^NOMAD_"; id -u'],
      tty: true,
      stdin: 'pipe',
      separateStderr: true,
      privileged: false,
      setuser: SETUSER,
    });
    await opened(session);
    // The command's session and the stderr reader's, both children.
    expect(execChildren()).toHaveLength(2);
    session.stdin.write('it\'s "$HOME"\n');
    const [stdout, stderr, code] = await Promise.all([collect(session.stdout), collect(session.stderr), session.exitCode]);
    expect(stdout.toString().replace(/\r\n/g, '\n')).toBe(`it's "$HOME"\nout it's "$HOME"\n0\n65534\n`);
    expect(stderr.toString()).toBe(`err it's "$HOME"\n`);
    expect(code).toBe(0);
    expect(execChildren()).toEqual([]);
  });
});

describe('exec children in the supervisor machine', () => {
  const session = { allocId: 'a', task: 'main', command: ['true'], tty: false };

  test('a transport that throws fails its session, and the supervisor forgets it', () => {
    const clock = new VirtualClock();
    const throwing = fromCallback<ExecTransportCommand, ExecSessionInput>(() => {
      throw new Error('socket exploded');
    });
    const actor = createActor(supervisorMachine.provide({ actors: { execSession: execSessionMachine.provide({ actors: { transport: throwing } }) } }), {
      clock,
    }).start();
    let outcome: unknown;
    actor.subscribe({
      next: (snapshot) => {
        const child = snapshot.children[execActorId('s1')];
        if (child) child.subscribe({ complete: () => (outcome = child.getSnapshot().output) });
      },
    });
    actor.send({ type: 'EXEC.START', sessionId: 's1', session });
    expect(outcome).toEqual({ status: 'failed', error: new Error('socket exploded') });
    expect(actor.getSnapshot().status).toBe('active');
    expect(actor.getSnapshot().context.execSessions).toEqual([]);
  });

  test('a child that errors leaves the lists instead of ending the supervisor', () => {
    const clock = new VirtualClock();
    const exits = fromCallback<ExecTransportCommand, ExecSessionInput>(({ sendBack }) => {
      sendBack({ type: 'TRANSPORT.EXITED', exitCode: 0 });
    });
    const buggy = execSessionMachine.provide({
      actors: { transport: exits },
      actions: {
        recordExit: () => {
          throw new Error('bug in an action');
        },
      },
    });
    const actor = createActor(supervisorMachine.provide({ actors: { execSession: buggy } }), { clock }).start();
    actor.send({ type: 'EXEC.START', sessionId: 's1', session });
    expect(actor.getSnapshot().status).toBe('active');
    expect(actor.getSnapshot().context.execSessions).toEqual([]);
    expect(actor.getSnapshot().children).toEqual({});
    actor.send({ type: 'CONNECTION.STREAMING' });
    expect(actor.getSnapshot().value).toEqual({ running: 'streaming' });
  });
});
