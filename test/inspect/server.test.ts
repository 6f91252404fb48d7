/**
 * The inspector over a supervisor following FakeNomad on a VirtualClock: the snapshot endpoint
 * against the supervisor's own verdicts, the WebSocket's snapshot-then-deltas for early and late
 * clients, hostile names kept as data, no token in any byte served, and a client that stops reading.
 */
import { createHash } from 'node:crypto';
import { loadPageAssets } from '../../src/inspect/assets.js';
import { InspectionModel, InspectorServer, InspectorServerError, type AllocationInfo } from '../../src/inspect/index.js';
import { isoTime } from '../../src/inspect/time.js';
import { VirtualClock } from '../../src/clock/index.js';
import { serviceJob } from '../testing/helpers.js';
import { driveTo, loadScenario, requestedIndex, stripNomadVerdict } from '../supervisor/support/harness.js';
import { byId, fetchSnapshot, get, openLive, rebuild, startInspected, until } from './support.js';

const START = Date.UTC(2026, 10, 29, 18);

function finalVerdicts(allocations: Iterable<AllocationInfo>): Record<string, unknown> {
  return Object.fromEntries([...allocations].map((a) => [a.id, a.verdict]));
}

describe('the inspection server', () => {
  test('the snapshot endpoint: each judged allocation with its job version, policy, times and the verdict with per-task reasons the supervisor reached', async () => {
    const scenario = loadScenario('rolling_update');
    const inspected = await startInspected(scenario.opened);
    try {
      inspected.fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
      await driveTo(inspected.clock, scenario.closed);
      const snapshot = await fetchSnapshot(inspected.server.url);
      expect(snapshot.type).toBe('snapshot');
      expect(snapshot.connection.state).toBe('streaming');
      expect(snapshot).toMatchObject({ schemaVersion: 1, now: isoTime(inspected.clock.now()) });
      expect(inspected.verdicts.length).toBeGreaterThan(0);
      const allocations = byId(snapshot);
      for (const record of inspected.verdicts) {
        const shown = allocations.get(record.alloc.allocId)!;
        expect(shown).toMatchObject({ finished: true, jobId: record.alloc.jobId, name: record.alloc.name, taskGroup: record.alloc.taskGroup });
        // The job's update block says min_healthy_time = "2s", healthy_deadline = "20s": one form per duration.
        expect(shown.policy).toMatchObject({ minHealthyTimeMs: 2000, healthyDeadlineMs: 20_000 });
        expect(Object.keys(shown.policy).sort()).toEqual(['checks', 'healthyDeadlineMs', 'minHealthyTimeMs', 'source', 'useChecks']);
        const outcome = record.outcome;
        if (!('healthy' in outcome)) {
          expect(shown.verdict).toEqual({ healthy: null, at: isoTime(outcome.at), reasons: [] });
          continue;
        }
        expect(shown.verdict).toEqual({ healthy: outcome.healthy, at: isoTime(outcome.at), reasons: Object.entries(outcome.reasons).map(([task, reason]) => ({ task, reason })) });
        expect(shown.jobVersion).toBe(inspected.fake.cluster.deployment(record.alloc.deploymentId!)!.JobVersion);
        if (outcome.healthy) {
          // Healthy exactly min_healthy_time after the latest start, before the deadline.
          expect(shown.healthyAt).toBe(isoTime(outcome.at));
          expect(Date.parse(shown.latestStart!) + shown.policy.minHealthyTimeMs).toBe(Date.parse(shown.healthyAt!));
          expect(Date.parse(shown.healthyAt!)).toBeLessThanOrEqual(Date.parse(shown.deadlineAt));
          expect(Date.parse(shown.watchingSince) + shown.policy.healthyDeadlineMs).toBe(Date.parse(shown.deadlineAt));
          expect(shown.lastTransition).toMatchObject({ from: 'minHealthyWait', to: 'healthy' });
        }
      }
      // Both versions of the rolling update are listed, each allocation under its own.
      expect(new Set(snapshot.allocations.map((a) => a.jobVersion))).toEqual(new Set([0, 1]));
    } finally {
      await inspected.close();
    }
  });

  test('the WebSocket sends the snapshot first, then deltas; a client joining late gets the snapshot of that moment; both end with the server state', async () => {
    const scenario = loadScenario('rolling_update');
    const inspected = await startInspected(scenario.opened);
    try {
      const early = await openLive(inspected.server.url);
      await until(() => early.messages.length >= 1);
      expect(early.messages[0]).toMatchObject({ type: 'snapshot', resynced: false, allocations: [] });
      inspected.fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
      // Until some allocation waits out min_healthy_time after others were judged.
      const waiting = (): boolean => {
        const { allocations } = inspected.model.snapshot();
        return allocations.some((a) => a.finished) && allocations.some((a) => a.state === 'minHealthyWait');
      };
      while (!waiting() && inspected.clock.now() < scenario.closed) await driveTo(inspected.clock, inspected.clock.now() + 100);
      const atMiddle = await fetchSnapshot(inspected.server.url);
      expect(atMiddle.allocations.some((a) => !a.finished)).toBe(true);
      const late = await openLive(inspected.server.url);
      await until(() => late.messages.length >= 1);
      expect(late.messages[0]).toEqual(atMiddle);
      await driveTo(inspected.clock, scenario.closed);
      const final = await fetchSnapshot(inspected.server.url);
      await until(() => rebuild(early.messages).size === final.allocations.length && rebuild(late.messages).size === final.allocations.length);
      await until(() => JSON.stringify(finalVerdicts(rebuild(late.messages).values())) === JSON.stringify(finalVerdicts(final.allocations)));
      expect(rebuild(early.messages)).toEqual(byId(final));
      expect(rebuild(late.messages)).toEqual(byId(final));
      // The early client saw the waiting state live, as a delta.
      const states = early.messages.filter((m) => m.type === 'allocation').map((m) => (m.allocation as AllocationInfo).state);
      expect(states).toEqual(expect.arrayContaining(['pending', 'minHealthyWait', 'healthy']));
      early.close();
      late.close();
      await until(() => inspected.server.clientCount === 0);
    } finally {
      await inspected.close();
    }
  });

  test('hostile job and task names are data: the page never carries them, the JSON keeps them intact, and the page script never parses data as HTML', async () => {
    const job = '<img/src=x/onerror=alert(1)>';
    const task = '"><script>alert(2)</script>&amp;';
    const inspected = await startInspected(START);
    try {
      const { cluster } = inspected.fake;
      cluster.registerJob(serviceJob(job, { TaskGroups: [{ Name: 'g<b>', Count: 1, Tasks: [{ Name: task, Driver: 'raw_exec', Config: { command: '/bin/sh' } }] }] }));
      const [alloc] = cluster.placeAllocations(job, { count: 1 });
      await driveTo(inspected.clock, START + 500);
      cluster.failTask(alloc!.ID, task, { exitCode: 1 });
      await driveTo(inspected.clock, START + 1_000);
      const snapshot = await fetchSnapshot(inspected.server.url);
      const shown = byId(snapshot).get(alloc!.ID)!;
      expect(shown).toMatchObject({ jobId: job, taskGroup: 'g<b>', state: 'unhealthy' });
      expect(shown.verdict?.reasons).toEqual([{ task, reason: 'Unhealthy because of failed task' }]);
      for (const path of ['/', '/app.js', '/app.css']) {
        const { body } = await get(inspected.server.url, path);
        for (const hostile of [job, task, 'alert(1)', 'alert(2)']) expect(body).not.toContain(hostile);
      }
      const page = await get(inspected.server.url, '/');
      expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(page.headers.get('content-security-policy')).not.toContain('unsafe-inline');
      const api = await get(inspected.server.url, '/api/snapshot');
      expect(api.headers.get('content-type')).toMatch(/^application\/json/);
      expect(api.headers.get('x-content-type-options')).toBe('nosniff');
      // The script puts values on the page as text only.
      expect(loadPageAssets().script).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/);
    } finally {
      await inspected.close();
    }
  });

  test('no byte served (page, assets, snapshot, errors, every WebSocket message) contains the Nomad token', async () => {
    const token = `tok-${createHash('sha256').update('inspector').digest('hex').slice(0, 24)}`;
    const scenario = loadScenario('failed_task');
    const inspected = await startInspected(scenario.opened, { token });
    try {
      const live = await openLive(inspected.server.url);
      inspected.fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
      await driveTo(inspected.clock, scenario.closed);
      expect(inspected.verdicts.length).toBeGreaterThan(0);
      const served = await Promise.all(['/', '/app.js', '/app.css', '/api/snapshot', '/nothing-here', '/api/snapshot?token=x'].map((p) => get(inspected.server.url, p)));
      await until(() => live.messages.some((m) => m.type === 'allocation'));
      const everything = [...served.map((r) => `${[...r.headers].join('\n')}\n${r.body}`), ...live.texts].join('\n');
      expect(everything).toContain(inspected.verdicts[0]!.alloc.allocId);
      expect(everything).not.toContain(token);
      live.close();
    } finally {
      await inspected.close();
    }
  });

  test('secrets given to the model are redacted wherever a string carries them', () => {
    const model = new InspectionModel({ clock: new VirtualClock({ start: START }), secrets: ['s3cr3t-token', undefined] });
    const now = isoTime(START);
    const text = model.serialize({ type: 'problem', now, problem: { seq: 1, at: now, kind: 'stream-failed', message: 'refused: s3cr3t-token (X-Nomad-Token s3cr3t-token)', allocId: null } });
    expect(text).not.toContain('s3cr3t-token');
    expect(JSON.parse(text)).toMatchObject({ problem: { message: 'refused: [redacted] (X-Nomad-Token [redacted])' } });
  });

  test('requests for another host and websockets from another origin are refused', async () => {
    const inspected = await startInspected(START);
    try {
      const { port } = new URL(inspected.server.url);
      const { request } = await import('node:http');
      const status = (headers: Record<string, string>, path = '/'): Promise<number> =>
        new Promise((resolve, reject) => {
          request({ host: '127.0.0.1', port, path, headers }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          })
            .on('error', reject)
            .end();
        });
      expect(await status({ host: `127.0.0.1:${port}` })).toBe(200);
      expect(await status({ host: `evil.example:${port}` })).toBe(421);
      const upgrade = { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' };
      expect(await status({ ...upgrade, host: `127.0.0.1:${port}`, origin: 'http://evil.example' }, '/api/live')).toBe(403);
      expect(await status({ ...upgrade, host: `evil.example:${port}` }, '/api/live')).toBe(403);
      expect(inspected.server.clientCount).toBe(0);
    } finally {
      await inspected.close();
    }
  });
});

test('a port in use, a port out of range or a host off loopback is refused with a typed error', async () => {
  const model = new InspectionModel({ clock: new VirtualClock({ start: START }) });
  const first = await InspectorServer.start({ model });
  try {
    const taken = Number(new URL(first.url).port);
    await expect(InspectorServer.start({ model, port: taken })).rejects.toThrow(InspectorServerError);
    await expect(InspectorServer.start({ model, port: taken })).rejects.toThrow(`cannot listen on 127.0.0.1:${taken}`);
    await expect(InspectorServer.start({ model, port: 70_000 })).rejects.toThrow(InspectorServerError);
    await expect(InspectorServer.start({ model, host: '0.0.0.0' as '127.0.0.1' })).rejects.toThrow('loopback only');
  } finally {
    await first.close();
  }
});

test('the page\'s script and style are the built assets, served with their types; a server without them says how to build them', async () => {
  const model = new InspectionModel({ clock: new VirtualClock({ start: START }) });
  const server = await InspectorServer.start({ model, tickMs: 0 });
  try {
    const { script, style } = loadPageAssets();
    const js = await get(server.url, '/app.js');
    const css = await get(server.url, '/app.css');
    expect(js).toMatchObject({ status: 200, body: script });
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(css).toMatchObject({ status: 200, body: style });
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    // Built from TypeScript: the bundle names its sources.
    expect(script).toContain('// src/inspect/browser/main.ts');
  } finally {
    await server.close();
  }
  await expect(InspectorServer.start({ model, assetsDir: '/nonexistent/inspector' })).rejects.toThrow(/page is not built .*run `npm run build:inspector`/);
});
