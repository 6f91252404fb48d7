/**
 * ID prefixes and ID lookups, as Nomad 1.1.2's state store parses them (go-memdb's UUIDFieldIndex):
 * an allocation, evaluation or deployment prefix must be hexadecimal with dashes anywhere, of even
 * length without them, at most 36 characters and 4 dashes; it matches on the bytes it decodes to.
 * A job prefix is a plain string prefix. A single-object read wants a whole 36-character UUID.
 */
import { register, rawExecJob } from './support/scenario.js';
import { useTarget } from './support/target.js';

interface Stub {
  ID: string;
}

/** [prefix, what the state store says of it] — undefined: accepted. */
const PREFIXES: readonly [string, string | undefined][] = [
  ['zz', "index error: Invalid UUID: encoding/hex: invalid byte: U+007A 'z'"],
  ['0g', "index error: Invalid UUID: encoding/hex: invalid byte: U+0067 'g'"],
  ['g0', "index error: Invalid UUID: encoding/hex: invalid byte: U+0067 'g'"],
  ['éé', "index error: Invalid UUID: encoding/hex: invalid byte: U+00C3 'Ã'"],
  ['abc', 'index error: Input (without hyphens) must be even length'],
  ['a', 'index error: Input (without hyphens) must be even length'],
  ['0-', 'index error: Input (without hyphens) must be even length'],
  ['0-00', 'index error: Input (without hyphens) must be even length'],
  ['0123456789012345678901234567890123456', 'index error: Invalid UUID length. UUID have 36 characters; got 37'],
  ['00000000-0000-0000-0000-0000000000000', 'index error: Invalid UUID length. UUID have 36 characters; got 37'],
  ['------', 'index error: UUID should have maximum of 4 "-"; got 6'],
  ['0-0', undefined],
  ['--', undefined],
  ['-', undefined],
  ['AB', undefined],
  ['0123456789abcdef0123456789abcdef', undefined],
  ['00000000-0000-0000-0000-000000000000', undefined],
];

const LISTS = [
  ['/v1/allocations', 'alloc lookup failed: '],
  ['/v1/evaluations', 'eval lookup failed: '],
  ['/v1/deployments', ''],
] as const;

/** Strips dashes and lower-cases: what a prefix and an ID are compared as. */
const bytes = (text: string): string => text.replace(/-/g, '').toLowerCase();

describe('ID prefixes and lookups', () => {
  const target = useTarget();

  test.each(LISTS)('%s?prefix= must be a hexadecimal UUID prefix: 500 with the state store\'s text, or the matching IDs', async (path, lead) => {
    for (const [prefix, error] of PREFIXES) {
      const answer = await target.request('GET', `${path}?prefix=${encodeURIComponent(prefix)}`);
      if (error === undefined) {
        expect([prefix, answer.status]).toEqual([prefix, 200]);
        // Another suite's objects may match on the live agent: each must start with the prefix's bytes.
        for (const stub of answer.json<Stub[]>()) expect(bytes(stub.ID).startsWith(bytes(prefix))).toBe(true);
      } else {
        expect([prefix, answer.status, answer.text, answer.headers['content-type']]).toEqual([prefix, 500, `${lead}${error}`, 'text/plain; charset=utf-8']);
      }
    }
    // namespace=* parses the prefix the same way.
    const all = await target.request('GET', `${path}?prefix=zz&namespace=*`);
    expect([all.status, all.text]).toEqual([500, `${lead}${PREFIXES[0]![1]}`]);
  });

  test('a prefix matches on the bytes it decodes to: upper case, dashes anywhere; a non-matching one finds nothing', async () => {
    const id = target.jobId('prefix');
    const written = await register(target, rawExecJob(id));
    const [alloc] = await target.waitFor<(Stub & { DeploymentID?: string })[]>('the allocation placed', `/v1/job/${id}/allocations`, (list) => list.length === 1);
    const deployment = await target.waitFor<Stub | null>('the deployment', `/v1/job/${id}/deployment`, (d) => d !== null);
    for (const [path, wanted] of [['/v1/allocations', alloc!.ID], ['/v1/evaluations', written.EvalID], ['/v1/deployments', deployment!.ID]] as const) {
      const found = async (prefix: string): Promise<boolean> => {
        const answer = await target.request('GET', `${path}?prefix=${encodeURIComponent(prefix)}`);
        expect([prefix, answer.status]).toEqual([prefix, 200]);
        return answer.json<Stub[]>().some((stub) => stub.ID === wanted);
      };
      expect(await found(wanted.slice(0, 2))).toBe(true);
      expect(await found(wanted.slice(0, 4).toUpperCase())).toBe(true);
      expect(await found(`${wanted[0]!}-${wanted[1]!}`)).toBe(true);
      expect(await found(wanted.slice(0, 11))).toBe(true);
      expect(await found(wanted)).toBe(true);
      expect(await found(wanted.toUpperCase())).toBe(true);
      const other = (parseInt(wanted.slice(0, 2), 16) ^ 0xff).toString(16).padStart(2, '0');
      expect(await found(other)).toBe(false);
    }
  });

  test('a job prefix is a plain string prefix: any text, case-sensitive', async () => {
    const id = target.jobId('jobprefix');
    await register(target, rawExecJob(id, { type: 'batch', count: 0 }));
    const ids = async (prefix: string): Promise<string[]> => {
      const answer = await target.request('GET', `/v1/jobs?prefix=${encodeURIComponent(prefix)}`);
      expect([prefix, answer.status]).toEqual([prefix, 200]);
      return answer.json<Stub[]>().map((stub) => stub.ID);
    };
    expect(await ids('zz-no-such-job')).toEqual([]);
    expect(await ids(id.slice(0, -2))).toContain(id);
    expect(await ids(id)).toEqual([id]);
    expect(await ids(id.toUpperCase())).toEqual([]);
  });

  test('single-object reads: an unknown UUID is a 404 with the query headers, anything else the lookup\'s 500', async () => {
    const unknown = '00000000-0000-0000-0000-000000000000';
    for (const [path, notFound, lead] of [
      ['/v1/allocation', 'alloc not found', 'alloc lookup failed'],
      ['/v1/evaluation', 'eval not found', 'eval lookup failed'],
      ['/v1/deployment', 'deployment not found', 'deployment lookup failed'],
    ] as const) {
      const missing = await target.request('GET', `${path}/${unknown}`);
      expect([path, missing.status, missing.text, missing.headers['content-type']]).toEqual([path, 404, notFound, 'text/plain; charset=utf-8']);
      expect(missing.headers).toMatchObject({ 'x-nomad-knownleader': 'true', 'x-nomad-lastcontact': '0' });
      expect(missing.headers['x-nomad-index']).toMatch(/^\d+$/);
      const short = await target.request('GET', `${path}/zz`);
      expect([path, short.status, short.text]).toEqual([path, 500, `${lead}: index error: UUID must be 36 characters`]);
      expect(short.headers['x-nomad-index']).toBeUndefined();
      const notHex = await target.request('GET', `${path}/${unknown.replace(/0/g, 'z')}`);
      expect([path, notHex.status, notHex.text]).toEqual([path, 500, `${lead}: index error: Invalid UUID: encoding/hex: invalid byte: U+007A 'z'`]);
    }
    const stop = await target.request('PUT', `/v1/allocation/${unknown}/stop`);
    expect([stop.status, stop.text]).toEqual([404, 'allocation not found']);
    const badStop = await target.request('PUT', '/v1/allocation/zz/stop');
    expect([badStop.status, badStop.text]).toEqual([500, 'alloc lookup failed: index error: UUID must be 36 characters']);
  });

  test('a whole ID in upper case still names the object (the lookup is on the bytes)', async () => {
    const id = target.jobId('upper');
    const written = await register(target, rawExecJob(id, { type: 'batch', count: 0 }));
    const answer = await target.request('GET', `/v1/evaluation/${written.EvalID.toUpperCase()}`);
    expect(answer.status).toBe(200);
    expect(answer.json<Stub>().ID).toBe(written.EvalID);
  });
});
