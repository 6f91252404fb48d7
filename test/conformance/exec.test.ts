/**
 * The exec websocket (/v1/client/allocation/:id/exec) as Nomad 1.1.2 answers it: a session's frames
 * and close, and each mistake where the client sees it, an HTTP error before the upgrade or a
 * close frame after it (1008 for Nomad's 4xx, 1011 for its 500s).
 */
import { getRequest, overOneConnection, upgradeRequest, type RawAnswer } from './support/rawConnection.js';
import { register, rawExecJob } from './support/scenario.js';
import { useTarget, type ExecOutcome } from './support/target.js';

const UNKNOWN = '00000000-0000-0000-0000-000000000000';
const command = (argv: readonly string[]): string => encodeURIComponent(JSON.stringify(argv));
const STDIN_CLOSE = { stdin: { close: true } };

/** The close (code, reason) of a session that was upgraded, or the HTTP answer of one that was not. */
const ending = (outcome: ExecOutcome): [number, string] => ('http' in outcome ? [outcome.http, outcome.body] : [outcome.code, outcome.reason]);

/** A session's output frames, which streams it closed (in either order: two goroutines send them), its last frame, its close. */
function session(outcome: ExecOutcome): unknown {
  if ('http' in outcome) return outcome;
  const isClose = (frame: Record<string, unknown>): boolean => Object.values(frame).some((v) => (v as { close?: boolean } | undefined)?.close === true);
  return {
    output: outcome.frames.slice(0, -1).filter((f) => !isClose(f)),
    closes: outcome.frames.filter(isClose).flatMap((f) => Object.keys(f)).sort(),
    last: outcome.frames.at(-1),
    code: outcome.code,
    reason: outcome.reason,
  };
}

describe('exec', () => {
  const target = useTarget();

  async function runningAllocation(name: string): Promise<string> {
    const id = target.jobId(name);
    await register(target, rawExecJob(id, { type: 'batch', count: 1 }));
    const [alloc] = await target.waitFor<{ ID: string; ClientStatus: string }[]>('running', `/v1/job/${id}/allocations`, (list) => list[0]?.ClientStatus === 'running');
    return alloc!.ID;
  }

  test('a command: its output, both streams closed, the exit code (left out when 0), then a normal close', async () => {
    const alloc = await runningAllocation('exec');
    const ok = await target.exec(`/v1/client/allocation/${alloc}/exec?task=t&command=${command(['/bin/echo', 'hi'])}`, [STDIN_CLOSE]);
    expect(session(ok)).toEqual({ output: [{ stdout: { data: Buffer.from('hi\n').toString('base64') } }], closes: ['stderr', 'stdout'], last: { exited: true, result: {} }, code: 1000, reason: '' });
    const failed = await target.exec(`/v1/client/allocation/${alloc}/exec?task=t&command=${command(['/bin/sh', '-c', 'echo oops >&2; exit 3'])}`, [STDIN_CLOSE]);
    expect(session(failed)).toEqual({ output: [{ stderr: { data: Buffer.from('oops\n').toString('base64') } }], closes: ['stderr', 'stdout'], last: { exited: true, result: { exit_code: 3 } }, code: 1000, reason: '' });
  });

  test('mistakes after the upgrade: close frames with Nomad\'s texts', async () => {
    const alloc = await runningAllocation('execbad');
    const echo = command(['/bin/echo', 'hi']);
    expect(ending(await target.exec(`/v1/client/allocation/${UNKNOWN}/exec?task=t&command=${echo}`))).toEqual([1008, `Unknown allocation "${UNKNOWN}"`]);
    expect(ending(await target.exec(`/v1/client/allocation/zz/exec?task=t&command=${echo}`))).toEqual([1011, 'alloc lookup failed: index error: UUID must be 36 characters']);
    expect(ending(await target.exec(`/v1/client/allocation/${alloc}/exec?task=nope&command=${echo}`))).toEqual([1011, 'task not found']);
    expect(ending(await target.exec(`/v1/client/allocation/${alloc}/exec?command=${echo}`))).toEqual([1008, 'must provide task name']);
    expect(ending(await target.exec(`/v1/client/allocation/${alloc}/exec?task=t&command=${command([])}`))).toEqual([1008, 'command is not present']);
  });

  test('mistakes before the upgrade: HTTP 500s; a request that is no websocket: 400', async () => {
    const alloc = await runningAllocation('exechttp');
    expect(ending(await target.exec(`/v1/client/allocation/${alloc}/exec?task=t`))).toEqual([500, 'failed to marshal command into json: unexpected end of JSON input']);
    expect(ending(await target.exec(`/v1/client/allocation/${alloc}/exec?task=t&command=notjson`))).toEqual([500, "failed to marshal command into json: invalid character 'o' in literal null (expecting 'u')"]);
    expect(ending(await target.exec(`/v1/client/allocation/${alloc}/exec?task=t&command=${command(['a'])}&tty=maybe`))).toEqual([500, 'tty value is not a boolean: strconv.ParseBool: parsing "maybe": invalid syntax']);
    // A path Go cannot unescape: net/http's own 400, before any handler.
    expect(await target.exec(`/v1/client/allocation/%E0%A4%A/exec?task=t&command=${command(['a'])}`)).toEqual({ http: 400, body: '400 Bad Request' });
    const plain = await target.request('GET', `/v1/client/allocation/${alloc}/exec?task=t&command=${command(['/bin/echo'])}`);
    expect([plain.status, plain.text]).toEqual([400, "Bad Request\nfailed to upgrade connection: websocket: the client is not using the websocket protocol: 'upgrade' token not found in 'Connection' header"]);
  });

  test('a refusal before the upgrade keeps the connection, which the client must close; Go\'s own 400 ends it', async () => {
    const alloc = await runningAllocation('execkeep');
    const noCommand = (host: string): string => upgradeRequest(host, `/v1/client/allocation/${alloc}/exec?task=t`);
    const kept = await target.within('a refusal, then a request on its connection', 30_000, overOneConnection(target.address, [noCommand, (host) => getRequest(host, '/v1/status/leader')]));
    const closes = ({ status, connection }: RawAnswer): [number, boolean] => [status, connection === 'close'];
    expect(kept.answers.map(closes)).toEqual([[500, false], [200, false]]);
    expect(kept.ended).toBe(false);
    const badPath = (host: string): string => upgradeRequest(host, `/v1/client/allocation/%E0%A4%A/exec?task=t&command=${command(['a'])}`);
    const ended = await target.within('Go\'s 400', 30_000, overOneConnection(target.address, [badPath, (host) => getRequest(host, '/v1/status/leader')]));
    expect(ended.answers.map((answer) => [...closes(answer), answer.body])).toEqual([[400, true, '400 Bad Request']]);
    expect(ended.ended).toBe(true);
  });

  test('a task not started yet, and one that has finished: 1008 with the task\'s state', async () => {
    const id = target.jobId('execstate');
    await register(target, rawExecJob(id, { type: 'batch', count: 1 }));
    const [placed] = await target.waitFor<{ ID: string }[]>('placed', `/v1/job/${id}/allocations`, (list) => list.length === 1);
    const echo = command(['/bin/echo', 'hi']);
    // Placed is not yet pulled: until its client has the allocation, Nomad answers `Unknown allocation`
    // (seen on a loaded agent). Asked again at once until the client has it, within a bound.
    const beforeStart = async (): Promise<[number, string]> => {
      for (;;) {
        const answer = ending(await target.exec(`/v1/client/allocation/${placed!.ID}/exec?task=t&command=${echo}`));
        if (answer[1] !== `Unknown allocation "${placed!.ID}"`) return answer;
      }
    };
    expect(await target.within('the client to have the allocation', 10_000, beforeStart())).toEqual([1008, 'task "t" not started yet.']);
    await target.waitFor<{ ClientStatus: string }[]>('running', `/v1/job/${id}/allocations`, (list) => list[0]?.ClientStatus === 'running');
    await target.request('DELETE', `/v1/job/${id}`);
    await target.waitFor<{ ClientStatus: string }[]>('stopped', `/v1/job/${id}/allocations`, (list) => list[0]?.ClientStatus === 'complete');
    expect(ending(await target.exec(`/v1/client/allocation/${placed!.ID}/exec?task=t&command=${echo}`))).toEqual([1008, 'task "t" is not running.']);
  });
});
