/**
 * Exec against Nomad before and after 2.0.3 (nomad-protocol §3.5, §10): token and `command` errors
 * come as HTTP errors instead of the upgrade before, as close frames after it from 2.0.3; the
 * client maps both forms to the same typed errors. FakeNomad plays either version.
 */
import WebSocket from 'ws';
import { VirtualClock } from '../../src/clock/index.js';
import { ExecClient } from '../../src/exec/execClient.js';
import {
  ExecCommandStartError,
  ExecPermissionDeniedError,
  errorFromClose,
  errorFromHttpStatus,
  type ExecError,
} from '../../src/nomad/exec/errors.js';
import { FakeNomad, type FakeNomadVersion } from '../../src/testing/fakeNomad.js';

const VERSIONS: readonly FakeNomadVersion[] = ['1.1.2', '2.0'];

async function failureOf(version: FakeNomadVersion, token: string | undefined): Promise<unknown> {
  const clock = new VirtualClock();
  const fake = await FakeNomad.start({ clock, version, token: 'right' });
  const client = new ExecClient({ address: fake.address, ...(token === undefined ? {} : { token }) }, { clock });
  try {
    return await client.exec('0b6f1b4e-0000-0000-0000-000000000000', { task: 'main', command: ['true'] }).exitCode.then(
      () => 'exited',
      (error: unknown) => error,
    );
  } finally {
    await fake.close();
  }
}

/** What a raw websocket gets for `query` on the fake: the refused upgrade's status and body, or the close frame. */
async function rawAnswer(version: FakeNomadVersion, query: string): Promise<ExecError> {
  const fake = await FakeNomad.start({ clock: new VirtualClock(), version });
  try {
    const url = `${fake.address.replace('http', 'ws')}/v1/client/allocation/x/exec?task=main&${query}`;
    return await new Promise<ExecError>((resolve) => {
      const ws = new WebSocket(url);
      ws.on('unexpected-response', (_request, response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => {
          ws.terminate();
          resolve(errorFromHttpStatus(response.statusCode ?? 0, body));
        });
      });
      ws.on('close', (code: number, reason: Buffer) => resolve(errorFromClose(code, reason.toString())));
      ws.on('error', () => undefined);
    });
  } finally {
    await fake.close();
  }
}

describe.each(VERSIONS)('Nomad %s', (version) => {
  const upgraded = version === '2.0';

  it.each([
    ['a wrong token', 'wrong', /ACL token not found/],
    ['no token', undefined, /Permission denied/],
  ] as const)('%s: ExecPermissionDeniedError with Nomad’s reason', async (_name, token, reason) => {
    const error = await failureOf(version, token);
    expect(error).toBeInstanceOf(ExecPermissionDeniedError);
    expect((error as ExecError).reason).toMatch(reason);
    // Before 2.0.3 the upgrade is refused (HTTP 403); from 2.0.3 a close frame 1008 after it.
    expect(error).toMatchObject(upgraded ? { closeCode: 1008, status: undefined } : { status: 403, closeCode: undefined });
    expect((error as Error).message).not.toContain('wrong');
  });

  it('a command that is not a JSON array: ExecCommandStartError', async () => {
    const error = await rawAnswer(version, 'command=not-json');
    expect(error).toBeInstanceOf(ExecCommandStartError);
    expect(error.reason).toMatch(/^failed to marshal command into json/);
    expect(error).toMatchObject(upgraded ? { closeCode: 1011 } : { status: 500 });
  });
});

test('an expired token is a permission error in either form', () => {
  expect(errorFromClose(1008, 'ACL token expired')).toBeInstanceOf(ExecPermissionDeniedError);
  expect(errorFromHttpStatus(403, 'ACL token expired')).toBeInstanceOf(ExecPermissionDeniedError);
});

test('FakeNomad 2.0 exec takes the token from Authorization: Bearer (Nomad 1.4+)', async () => {
  const fake = await FakeNomad.start({ clock: new VirtualClock(), version: '2.0', token: 'right' });
  try {
    const url = `${fake.address.replace('http', 'ws')}/v1/client/allocation/00000000-0000-0000-0000-000000000000/exec?task=main&command=%5B%22true%22%5D`;
    const reason = await new Promise<string>((resolve) => {
      const ws = new WebSocket(url, { headers: { authorization: 'Bearer right' } });
      ws.on('close', (_code: number, text: Buffer) => resolve(text.toString()));
      ws.on('error', () => undefined);
    });
    // Past the token check: the unknown allocation is what ends it.
    expect(reason).toMatch(/^Unknown allocation/);
  } finally {
    await fake.close();
  }
});

test.each(VERSIONS)('Nomad %s: a command runs to its exit code, whether the session ends with a close frame (1.1.2) or a bare TCP close (1.8+)', async (version) => {
  const clock = new VirtualClock();
  const fake = await FakeNomad.start({ clock, version });
  try {
    fake.cluster.registerJob({ ID: 'exec-target', Name: 'exec-target', Type: 'batch', Datacenters: ['dc1'], TaskGroups: [{ Name: 'app', Count: 1, Tasks: [{ Name: 'main', Driver: 'raw_exec', Config: { command: '/bin/sh' } }] }] });
    const [alloc] = fake.cluster.placeAllocations('exec-target');
    fake.cluster.startTask(alloc!.ID);
    const client = new ExecClient({ address: fake.address }, { clock });
    const session = client.exec(alloc!.ID, { task: 'main', command: ['/bin/sh', '-c', 'printf hi; exit 3'], tty: true });
    const chunks: Buffer[] = [];
    session.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    expect(await session.exitCode).toBe(3);
    expect(Buffer.concat(chunks).toString()).toBe('hi');
    // What the fake itself does at the end, seen by a bare websocket that sends nothing.
    const url = `${fake.address.replace('http', 'ws')}/v1/client/allocation/${alloc!.ID}/exec?task=main&tty=true&command=%5B%22true%22%5D`;
    const closeCode = await new Promise<number>((resolve) => {
      const ws = new WebSocket(url);
      ws.on('close', (code: number) => resolve(code));
      ws.on('error', () => undefined);
    });
    expect(closeCode).toBe(version === '2.0' ? 1006 : 1000);
  } finally {
    await fake.close();
  }
});
