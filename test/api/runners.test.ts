/**
 * Poseidon's end-to-end behaviours of runners and their files (tests/e2e/runners_test.go),
 * rewritten against `warden serve --dev`: providing and deleting runners, listing, copying,
 * deleting and downloading files (relative and absolute paths, permission errors, protected
 * folders), and the inactivity timeout destroying a runner under a running execution.
 */
import { startServe, type ServeHarness } from './support/serveHarness.js';
import { asRoot } from '../testing/helpers.js';

const ENVIRONMENT = 1;
const FILE = 'test.txt';
const CONTENT = 'Hello, World!';

describe('warden serve: runners and files (Poseidon e2e)', () => {
  let h: ServeHarness;
  beforeAll(async () => {
    h = await startServe();
    await h.environment(ENVIRONMENT, 3);
  });
  afterAll(async () => {
    expect(await h.stop()).toBe(0);
  });
  const runner = (inactivityTimeout = 0): Promise<string> => h.runner(ENVIRONMENT, inactivityTimeout);
  async function printed(runnerId: string, file: string): Promise<{ stdout: string; stderr: string }> {
    const { stdout, stderr, control, close } = await h.run(runnerId, { command: `cat ${file}`, timeLimit: 10 });
    expect(close).toBe(1000);
    expect(control.at(-1)?.type).toBe('exit');
    return { stdout, stderr };
  }

  describe('POST /runners', () => {
    it('a valid request returns a runner, with an unguessable id and its mapped ports', async () => {
      const answer = await h.call('POST', '/api/v1/runners', { body: { executionEnvironmentId: ENVIRONMENT } });
      expect(answer.status).toBe(200);
      expect(answer.json).toEqual({ runnerId: expect.stringMatching(/^1-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/), mappedPorts: [] });
    });

    it('an invalid request returns bad request', async () => {
      expect((await h.call('POST', '/api/v1/runners', { raw: '' })).status).toBe(400);
    });

    it('a runner of an unknown environment is not found', async () => {
      const answer = await h.call('POST', '/api/v1/runners', { body: { executionEnvironmentId: 4242 } });
      expect(answer).toMatchObject({ status: 404, json: { message: 'execution environment not found' } });
    });

    it('an empty pool answers 500 NOMAD_OVERLOAD, as Poseidon', async () => {
      await h.environment(2, 1);
      await h.runner(2);
      const answer = await h.call('POST', '/api/v1/runners', { body: { executionEnvironmentId: 2 } });
      expect(answer).toMatchObject({ status: 500, json: { message: 'no runners available for this execution environment', errorCode: 'NOMAD_OVERLOAD' } });
      await h.settled(h.call('DELETE', '/api/v1/execution-environments/2'));
    });
  });

  describe('DELETE /runners/{id}', () => {
    it('deleting the runner returns 204 and removes its job from Nomad; again, or an unknown one, 410', async () => {
      const id = await runner();
      const answer = await h.settled(h.call('DELETE', `/api/v1/runners/${id}`));
      expect(answer).toMatchObject({ status: 204, text: '' });
      await expect(h.nomad.getJob(id)).rejects.toMatchObject({ status: 404 });
      expect(await h.call('DELETE', `/api/v1/runners/${id}`)).toMatchObject({ status: 410, json: { message: 'no runner found with this id' } });
      expect((await h.call('DELETE', '/api/v1/runners/1-00000000-0000-4000-8000-000000000000')).status).toBe(410);
    });

    it('an idle runner (never claimed) is not found either', async () => {
      const jobs = (await h.nomad.listJobs(`${ENVIRONMENT}-`)).body.filter((job) => job.Status === 'running');
      const metas = await Promise.all(jobs.map(async (job) => ({ id: job.ID, used: (await h.nomad.getJob(job.ID)).body.TaskGroups?.find((g) => g.Name === 'config')?.Meta?.used })));
      const idle = metas.find((job) => job.used === 'false');
      expect(idle).toBeDefined();
      expect((await h.call('DELETE', `/api/v1/runners/${idle!.id}`)).status).toBe(410);
    });
  });

  describe('GET /runners/{id}/files', () => {
    let id: string;
    beforeAll(async () => {
      id = await runner();
    });

    it('no files: an empty listing', async () => {
      const answer = await h.call('GET', `/api/v1/runners/${id}/files`);
      expect(answer.status).toBe(200);
      expect(answer.json).toEqual({ files: [] });
    });

    it('with a file: its name, type, size, time, permissions, owner and group', async () => {
      expect((await h.copy(id, { [FILE]: '' })).status).toBe(204);
      const answer = await h.call('GET', `/api/v1/runners/${id}/files`);
      expect(answer.status).toBe(200);
      const { files } = answer.json as { files: Record<string, unknown>[] };
      expect(files).toEqual([
        { name: `./${FILE}`, entryType: '-', size: 0, modificationTime: Math.floor(h.clock.now() / 1000), permissions: 'rwxr--r--', owner: 'root', group: 'root' },
      ]);
    });

    it('recursively by default, or not; from a path', async () => {
      expect((await h.copy(id, { 'dir/inner/deep.txt': 'deep' })).status).toBe(204);
      const names = async (query: string): Promise<string[]> =>
        ((await h.call('GET', `/api/v1/runners/${id}/files${query}`)).json as { files: { name: string }[] }).files.map((f) => f.name);
      expect(await names('')).toEqual(['./dir', `./${FILE}`, './dir/inner', './dir/inner/deep.txt']);
      // Not recursive: `ls` names the entries without the directory, as in Poseidon.
      expect(await names('?recursive=false')).toEqual(['dir', FILE]);
      expect(await names('?path=dir/inner')).toEqual(['dir/inner/deep.txt']);
    });

    it('links: the target when it can be read, none when it cannot', async () => {
      const link = async (path: string) => {
        const answer = await h.call('GET', `/api/v1/runners/${id}/files?path=${encodeURIComponent(path)}&recursive=false`);
        expect(answer.status).toBe(200);
        return (answer.json as { files: { name: string; entryType: string; linkTarget?: string }[] }).files;
      };
      const [own] = await link('/proc/self/cwd');
      expect(own).toMatchObject({ name: '/proc/self/cwd', entryType: 'l', linkTarget: expect.stringMatching(/\/default-task\/local$/) });
      if (process.getuid?.() === 0) {
        const [denied] = await link('/proc/1/cwd');
        expect(denied).toMatchObject({ name: '/proc/1/cwd', entryType: 'l' });
        expect(denied?.linkTarget).toBeUndefined();
      }
    });

    it('a path that does not exist: 424', async () => {
      const answer = await h.call('GET', `/api/v1/runners/${id}/files?path=missing`);
      expect(answer).toMatchObject({ status: 424, json: { message: 'file not found or insufficient permissions' } });
    });
  });

  describe('PATCH /runners/{id}/files', () => {
    let id: string;
    beforeAll(async () => {
      id = await runner();
    });

    it('a valid copy succeeds and the content can be printed in the runner', async () => {
      expect((await h.copy(id, { [FILE]: CONTENT })).status).toBe(204);
      expect(await printed(id, FILE)).toEqual({ stdout: CONTENT, stderr: '' });
    });

    it('files land at relative (to the working directory) and absolute paths, parents created', async () => {
      const absolute = `/tmp/warden-e2e-${id}/absolute/file/path.txt`;
      expect((await h.copy(id, { 'relative/file/path.txt': 'Relative file content', [absolute]: 'Absolute file content' })).status).toBe(204);
      expect(await printed(id, 'relative/file/path.txt')).toEqual({ stdout: 'Relative file content', stderr: '' });
      expect(await printed(id, absolute)).toEqual({ stdout: 'Absolute file content', stderr: '' });
      await h.copy(id, {}, [`/tmp/warden-e2e-${id}`]);
    });

    it('a deletion deletes the file; a copy comes after the deletion of the same request', async () => {
      expect((await h.copy(id, {}, [FILE])).status).toBe(204);
      const gone = await printed(id, FILE);
      expect(gone.stdout).toBe('');
      expect(gone.stderr).toContain('No such file or directory');
      expect((await h.copy(id, { [FILE]: CONTENT }, [FILE])).status).toBe(204);
      expect(await printed(id, FILE)).toEqual({ stdout: CONTENT, stderr: '' });
    });

    it('an invalid payload is a bad request; a runner that does not exist is gone', async () => {
      expect((await h.call('PATCH', `/api/v1/runners/${id}/files`, { raw: '', headers: { 'content-type': 'text/html' } })).status).toBe(400);
      expect((await h.copy('1-00000000-0000-4000-8000-000000000000', { [FILE]: CONTENT })).status).toBe(410);
    });

    asRoot('one file refused: 500 with tar\'s words, the others still copied', async () => {
      const answer = await h.copy(id, { '/proc/1/environ': CONTENT, [FILE]: 'New content' });
      expect(answer.status).toBe(500);
      expect(answer.json).toMatchObject({ errorCode: 'UNKNOWN', message: expect.stringContaining('Cannot open: ') });
      expect(await printed(id, FILE)).toEqual({ stdout: 'New content', stderr: '' });
    });

    asRoot('protected folders: the user can create files in them, not delete or change what was copied', async () => {
      expect((await h.call('PATCH', `/api/v1/runners/${id}/files`, {
        body: { copy: [{ path: 'protectedFolder/' }, { path: `protectedFolder/${FILE}`, content: Buffer.from('New content').toString('base64') }] },
      })).status).toBe(204);
      const user = (command: string) => h.run(id, { command, timeLimit: 10, privilegedExecution: false });
      expect(await user(`touch protectedFolder/userfile`)).toMatchObject({ stdout: '', stderr: '', close: 1000 });
      expect((await user('rm -fr protectedFolder/')).stderr).toContain('Operation not permitted');
      expect((await user(`rm -f protectedFolder/${FILE}`)).stderr).toContain('Operation not permitted');
      expect((await user(`echo Hi >> protectedFolder/${FILE}`)).stderr).toContain('Permission denied');
      expect(await printed(id, `protectedFolder/${FILE}`)).toEqual({ stdout: 'New content', stderr: '' });
    });
  });

  describe('GET /runners/{id}/files/raw', () => {
    let id: string;
    beforeAll(async () => {
      id = await runner();
    });

    it('a file that is not there: 424', async () => {
      expect((await h.call('GET', `/api/v1/runners/${id}/files/raw?path=${FILE}`)).status).toBe(424);
    });

    it('a file: its bytes, its length, as an attachment named by its path', async () => {
      const content = Buffer.from([0, 1, 2, 255, 10, 13, 0x1c]).toString('latin1') + 'New content ✓';
      expect((await h.copy(id, { [FILE]: content })).status).toBe(204);
      const answer = await h.call('GET', `/api/v1/runners/${id}/files/raw?path=${FILE}`);
      expect(answer.status).toBe(200);
      expect(answer.headers['content-length']).toBe(String(Buffer.byteLength(content)));
      expect(answer.headers['content-disposition']).toBe(`attachment; filename="${FILE}"`);
      expect(answer.text).toBe(content);
    });

    asRoot('a file the user may not read: 424 naming why', async () => {
      const answer = await h.call('GET', `/api/v1/runners/${id}/files/raw?path=/proc/1/environ`);
      expect(answer.status).toBe(424);
      expect(answer.text).toContain('file not found or insufficient permissions');
    });

    it('privileged, the same file can be read', async () => {
      const answer = await h.call('GET', `/api/v1/runners/${id}/files/raw?path=/proc/self/status&privilegedExecution=true`);
      expect(answer.status).toBe(200);
    });
  });

  it('the inactivity timeout destroys the runner under a running execution: its last message is a timeout', async () => {
    const id = await runner(2);
    const conversation = await h.connect(await h.execute(id, { command: 'sleep infinity' }));
    await conversation.next('start');
    await h.drive(1_900);
    expect(conversation.messages.map((m) => m.type)).toEqual(['start']);
    await h.drive(200);
    const { code } = await conversation.closed;
    expect(code).toBe(1000);
    expect(conversation.messages.at(-1)).toEqual({ type: 'timeout' });
    await h.drive(1_000);
    expect((await h.call('DELETE', `/api/v1/runners/${id}`)).status).toBe(410);
  });

  it('a file operation counts as activity: it starts the inactivity timeout again', async () => {
    const id = await runner(2);
    await h.drive(1_500);
    expect((await h.copy(id, { [FILE]: CONTENT })).status).toBe(204);
    await h.drive(1_500);
    expect((await h.call('GET', `/api/v1/runners/${id}/files`)).status).toBe(200);
    await h.drive(2_500);
    expect((await h.call('GET', `/api/v1/runners/${id}/files`)).status).toBe(410);
  });
});
