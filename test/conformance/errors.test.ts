/**
 * The errors Nomad 1.1.2 answers, status and text exactly as a client reads them (a Go client
 * matches on them): unknown objects, bad bodies, bad parameters, wrong methods and paths.
 */
import { useTarget } from './support/target.js';

const UNKNOWN = '00000000-0000-0000-0000-000000000000';

describe('errors', () => {
  const target = useTarget();

  const answer = async (method: 'GET' | 'PUT' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<[number, string]> => {
    const got = await target.request(method, path, body);
    return [got.status, got.text];
  };

  test('reads of a job that does not exist: 404s with the query headers, empty lists, a null deployment', async () => {
    const id = target.jobId('absent');
    for (const [path, text] of [[`/v1/job/${id}`, 'job not found'], [`/v1/job/${id}/versions`, 'job versions not found'], [`/v1/job/${id}/summary`, 'job not found']] as const) {
      const got = await target.request('GET', path);
      expect([path, got.status, got.text, got.headers['content-type']]).toEqual([path, 404, text, 'text/plain; charset=utf-8']);
      expect(got.headers).toMatchObject({ 'x-nomad-knownleader': 'true', 'x-nomad-lastcontact': '0' });
    }
    for (const [path, body] of [[`/v1/job/${id}/allocations`, '[]'], [`/v1/job/${id}/evaluations`, '[]'], [`/v1/job/${id}/deployments`, '[]'], [`/v1/job/${id}/deployment`, 'null'],
      [`/v1/evaluation/${UNKNOWN}/allocations`, '[]'], [`/v1/deployment/allocations/${UNKNOWN}`, '[]']] as const) {
      const got = await target.request('GET', path);
      expect([path, got.status, got.text, got.headers['content-type']]).toEqual([path, 200, body, 'application/json']);
      expect(got.headers['x-nomad-index']).toMatch(/^\d+$/);
    }
  });

  test('register bodies: Go\'s decoding errors, the HTTP layer\'s checks, the job\'s validation', async () => {
    const id = target.jobId('bad');
    expect(await answer('PUT', '/v1/jobs', '{bad')).toEqual([400, "invalid character 'b' looking for beginning of object key string"]);
    expect(await answer('PUT', '/v1/jobs', '{"Job":{"ID":"x"')).toEqual([400, 'unexpected EOF']);
    expect(await answer('PUT', '/v1/jobs', '{"Job" 1}')).toEqual([400, "invalid character '1' after object key"]);
    expect(await answer('PUT', '/v1/jobs', '{"Job":{}x}')).toEqual([400, "invalid character 'x' after object key:value pair"]);
    expect(await answer('PUT', '/v1/jobs', '{"Job":[1 2]}')).toEqual([400, "invalid character '2' after array element"]);
    expect(await answer('PUT', '/v1/jobs', '{"Job":nul}')).toEqual([400, "invalid character '}' in literal null (expecting 'l')"]);
    expect(await answer('PUT', '/v1/jobs', '{"Job":-x}')).toEqual([400, "invalid character 'x' in numeric literal"]);
    expect(await answer('PUT', '/v1/jobs', '')).toEqual([400, 'Request body is empty']);
    expect(await answer('PUT', '/v1/jobs', '[]')).toEqual([400, 'json: cannot unmarshal array into Go value of type api.JobRegisterRequest']);
    expect(await answer('PUT', '/v1/jobs', 'null')).toEqual([400, 'Job must be specified']);
    expect(await answer('PUT', '/v1/jobs', '{}')).toEqual([400, 'Job must be specified']);
    // Go's decoder reads the first value and leaves the rest unread.
    expect(await answer('PUT', '/v1/jobs', '{} trailing')).toEqual([400, 'Job must be specified']);
    expect(await answer('PUT', '/v1/jobs', { Job: {} })).toEqual([400, "Job ID hasn't been provided"]);
    expect(await answer('PUT', '/v1/jobs', { Job: { ID: id, Datacenters: 'dc1' } })).toEqual([400, 'json: cannot unmarshal string into Go struct field Job.Job.Datacenters of type []string']);
    expect(await answer('PUT', `/v1/job/${id}-other`, { Job: { ID: id } })).toEqual([400, 'Job ID does not match name']);
    expect(await answer('PUT', '/v1/jobs', { Job: { ID: id } })).toEqual([500, '2 errors occurred:\n\t* Missing job datacenters\n\t* Missing job task groups\n\n']);
    expect(await answer('PUT', '/v1/jobs', { Job: { ID: id, Datacenters: ['dc1'], TaskGroups: [] } })).toEqual([500, '1 error occurred:\n\t* Missing job task groups\n\n']);
    expect((await target.request('GET', `/v1/job/${id}`)).status).toBe(404);
  });

  test('deregistering a job that does not exist still writes a job-deregister evaluation', async () => {
    const id = target.jobId('never');
    for (const purge of [false, true]) {
      const got = await target.request('DELETE', `/v1/job/${id}${purge ? '?purge=true' : ''}`);
      expect(got.status).toBe(200);
      const body = got.json<Record<string, unknown>>();
      expect(Object.keys(body).sort()).toEqual(['EvalCreateIndex', 'EvalID', 'Index', 'JobModifyIndex', 'KnownLeader', 'LastContact', 'VolumeEvalID', 'VolumeEvalIndex']);
      expect(got.headers['x-nomad-index']).toBe(String(body.Index));
      const evaluation = await target.waitFor<Record<string, unknown>>('the evaluation complete', `/v1/evaluation/${String(body.EvalID)}`, (e) => e.Status === 'complete');
      expect(evaluation).toMatchObject({ JobID: id, TriggeredBy: 'job-deregister', Type: 'service', Status: 'complete' });
    }
    expect((await target.request('GET', `/v1/job/${id}`)).status).toBe(404);
  });

  test('writes to deployments that do not exist are 500s, as are IDs that are not UUIDs; scaling a job that does not exist a 404', async () => {
    const body = { DeploymentID: UNKNOWN };
    expect(await answer('PUT', `/v1/deployment/fail/${UNKNOWN}`, body)).toEqual([500, 'deployment not found']);
    expect(await answer('PUT', `/v1/deployment/pause/${UNKNOWN}`, { ...body, Pause: true })).toEqual([500, 'deployment not found']);
    expect(await answer('PUT', `/v1/deployment/promote/${UNKNOWN}`, { ...body, All: true })).toEqual([500, 'deployment not found']);
    expect(await answer('PUT', `/v1/deployment/allocation-health/${UNKNOWN}`, { ...body, HealthyAllocationIDs: [UNKNOWN] })).toEqual([500, 'deployment not found']);
    // A deployment ID that is no UUID is the lookup's error, as are the allocation lists by ID.
    for (const action of ['fail', 'pause', 'promote', 'allocation-health']) {
      expect(await answer('PUT', `/v1/deployment/${action}/nope`, { DeploymentID: 'nope', All: true, Pause: true, HealthyAllocationIDs: [UNKNOWN] }))
        .toEqual([500, 'deployment lookup failed: index error: UUID must be 36 characters']);
    }
    expect(await answer('GET', '/v1/deployment/allocations/nope')).toEqual([500, 'index error: UUID must be 36 characters']);
    expect(await answer('GET', '/v1/evaluation/nope/allocations')).toEqual([500, 'index error: UUID must be 36 characters']);
    const id = target.jobId('noscale');
    expect(await answer('PUT', `/v1/job/${id}/scale`, { Count: 1, Target: { Group: 'g' } })).toEqual([404, `job "${id}" not found`]);
  });

  test('query parameters: a bad index or wait is a 400; the event stream\'s own texts', async () => {
    expect(await answer('GET', '/v1/jobs?index=abc')).toEqual([400, 'Invalid index']);
    expect(await answer('GET', '/v1/jobs?index=-1')).toEqual([400, 'Invalid index']);
    expect(await answer('GET', '/v1/jobs?wait=30')).toEqual([400, 'Invalid wait time']);
    expect(await answer('GET', '/v1/jobs?wait=abc')).toEqual([400, 'Invalid wait time']);
    expect(await answer('GET', '/v1/event/stream?index=abc')).toEqual([400, 'Unable to parse index: strconv.Atoi: parsing "abc": invalid syntax']);
    expect(await answer('GET', '/v1/event/stream?topic=a:b:c')).toEqual([400, 'Invalid topic query: error parsing topics: Invalid key value pair for topic, topic: a:b:c']);
    expect(await answer('POST', '/v1/event/stream')).toEqual([405, 'Invalid method']);
  });

  test('methods and paths: 405 Invalid method, 404 with an empty body', async () => {
    expect(await answer('DELETE', '/v1/jobs')).toEqual([405, 'Invalid method']);
    expect(await answer('GET', '/v1/no/such/path')).toEqual([404, '']);
  });
});
