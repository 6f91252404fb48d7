/**
 * The inspector's page: one HTML document, its script and its style, all served by the inspector
 * itself (no CDN, nothing fetched from elsewhere). The chart comes laid out from the machine
 * definition (chart.ts); the script only marks the current state and the last move on it. Every
 * value from the cluster is put on the page with textContent, never parsed as HTML.
 */
import type { StateChart } from './chartSvg.js';

export function pageHtml(chart: StateChart): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Warden inspector</title>
<link rel="stylesheet" href="/app.css">
<script src="/app.js" defer></script>
</head>
<body>
<header>
  <h1>Warden <span>inspector</span></h1>
  <div id="connection" class="pill" data-state="connecting">connecting…</div>
  <div id="clock" class="muted"></div>
</header>
<div id="offline" class="banner" hidden>Lost the connection to the inspector. <button id="reconnect" type="button">Reconnect</button></div>
<main>
  <nav>
    <input id="filter" type="search" placeholder="Filter by job, name or id" aria-label="Filter allocations">
    <div id="allocations"></div>
    <p id="empty" class="muted">No allocation is being judged yet.</p>
  </nav>
  <section id="detail">
    <div id="nothing" class="muted">Select an allocation to see its health state chart and why it is (un)healthy.</div>
    <article id="selected" hidden>
      <h2 id="title"></h2>
      <div id="subtitle" class="muted"></div>
      <div id="verdict" class="verdict"></div>
      <div class="chartbox">${chart.svg}</div>
      <div class="grid">
        <div><h3>Times</h3><dl id="times"></dl></div>
        <div><h3>Policy</h3><dl id="policy"></dl></div>
      </div>
      <h3>Tasks</h3>
      <table id="tasks"><thead><tr><th>task</th><th>state</th><th>restarts</th><th>started</th><th>finished</th><th>lifecycle</th></tr></thead><tbody></tbody></table>
      <div id="checksbox"><h3>Checks</h3><table id="checks"><thead><tr><th>task</th><th>service</th><th>check</th><th>status</th></tr></thead><tbody></tbody></table></div>
    </article>
  </section>
  <aside>
    <h3>Evaluations</h3><ul id="evaluations" class="list"></ul>
    <h3>Exec sessions</h3><ul id="execSessions" class="list"></ul>
    <h3>Problems</h3><ul id="problems" class="list"></ul>
  </aside>
</main>
</body>
</html>
`;
}

export const PAGE_STYLE = `
:root { --bg:#0f1419; --panel:#171d25; --line:#2a3340; --text:#dbe2ea; --muted:#8593a3; --accent:#5eb1ff;
  --good:#3fb950; --bad:#f85149; --wait:#d29922; --stop:#8b949e; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--text); font-size:14px; }
header { display:flex; align-items:center; gap:16px; padding:10px 18px; border-bottom:1px solid var(--line); background:var(--panel); }
h1 { font-size:18px; margin:0; } h1 span { color:var(--muted); font-weight:400; }
h2 { margin:0 0 4px; font-size:18px; word-break:break-all; } h3 { font-size:12px; text-transform:uppercase; letter-spacing:.06em; color:var(--muted); margin:18px 0 6px; }
.muted { color:var(--muted); }
#clock { margin-left:auto; font-variant-numeric:tabular-nums; }
.pill { padding:3px 10px; border-radius:12px; background:#24303d; font-size:13px; }
.pill[data-state=streaming] { background:#16361f; color:#7ee2a8; }
.pill[data-state=backingOff], .pill[data-state=stopped] { background:#3d1d1f; color:#ff9a92; }
.pill[data-state=connecting], .pill[data-state=resyncing] { background:#3a2f12; color:#f0c66b; }
.banner { background:#3d1d1f; padding:8px 18px; }
main { display:grid; grid-template-columns: 360px 1fr 300px; min-height: calc(100vh - 50px); }
nav, aside { padding:12px; border-right:1px solid var(--line); overflow:auto; max-height: calc(100vh - 50px); }
aside { border-right:0; border-left:1px solid var(--line); }
#detail { padding:16px 22px; overflow:auto; max-height: calc(100vh - 50px); }
#filter { width:100%; padding:6px 8px; background:var(--bg); border:1px solid var(--line); border-radius:6px; color:var(--text); margin-bottom:8px; }
.job { margin:10px 0 2px; font-weight:600; word-break:break-all; }
.version { margin:6px 0 2px 8px; color:var(--muted); font-size:12px; }
.alloc { display:flex; gap:8px; align-items:center; width:100%; text-align:left; padding:5px 8px; margin:1px 0; border:0; border-radius:6px;
  background:transparent; color:var(--text); cursor:pointer; font:inherit; }
.alloc:hover { background:#1f2833; } .alloc.selected { background:#1d3047; }
.alloc.finished { opacity:.75; }
.alloc .name { flex:1; overflow:hidden; text-overflow:ellipsis; white-space:nowrap; }
.alloc .id { color:var(--muted); font-family:ui-monospace, monospace; font-size:12px; }
.badge { font-size:11px; padding:1px 7px; border-radius:9px; background:#24303d; white-space:nowrap; }
.badge[data-state=healthy] { background:#16361f; color:#7ee2a8; } .badge[data-state=unhealthy] { background:#3d1d1f; color:#ff9a92; }
.badge[data-state=minHealthyWait], .badge[data-state=running] { background:#3a2f12; color:#f0c66b; } .badge[data-state=stopped] { color:var(--stop); }
.verdict { margin:12px 0; padding:10px 14px; border-radius:8px; background:#1f2833; border-left:4px solid var(--wait); }
.verdict.healthy { border-color:var(--good); } .verdict.unhealthy { border-color:var(--bad); } .verdict.stopped { border-color:var(--stop); }
.verdict ul { margin:6px 0 0; padding-left:18px; } .verdict li { margin:3px 0; } .verdict .task { font-weight:600; }
.chartbox { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:6px; }
svg.chart { width:100%; height:auto; max-height:360px; display:block; }
svg.chart .node rect { fill:#1f2833; stroke:#3b4757; stroke-width:1.5; }
svg.chart .node text { fill:var(--text); font-size:14px; text-anchor:middle; }
svg.chart .node.final rect { stroke-width:3; stroke-dasharray:none; }
svg.chart .node.current rect { fill:#1d3047; stroke:var(--accent); stroke-width:3; }
svg.chart .node.current[data-state=healthy] rect { fill:#16361f; stroke:var(--good); }
svg.chart .node.current[data-state=unhealthy] rect { fill:#3d1d1f; stroke:var(--bad); }
svg.chart .node.current text { font-weight:700; }
svg.chart .edge path { fill:none; stroke:#3b4757; stroke-width:1.3; }
svg.chart .label { fill:var(--accent); font-size:11px; text-anchor:middle; opacity:0; paint-order:stroke; stroke:var(--panel); stroke-width:4px; }
svg.chart .edge:hover path { stroke:var(--muted); stroke-width:2.5; }
svg.chart .edge.taken path { stroke:var(--accent); stroke-width:2.5; } svg.chart .label.taken { opacity:1; }
svg.chart marker path, svg.chart .start circle { fill:#5b6878; } svg.chart .start path { stroke:#5b6878; stroke-width:1.3; }
.grid { display:grid; grid-template-columns:1fr 1fr; gap:20px; }
dl { display:grid; grid-template-columns:max-content 1fr; gap:4px 14px; margin:0; } dt { color:var(--muted); } dd { margin:0; font-variant-numeric:tabular-nums; }
table { border-collapse:collapse; width:100%; } th, td { text-align:left; padding:4px 8px; border-bottom:1px solid var(--line); word-break:break-all; }
th { color:var(--muted); font-weight:500; font-size:12px; }
td.failed { color:#ff9a92; }
.list { list-style:none; padding:0; margin:0; } .list li { padding:6px 0; border-bottom:1px solid var(--line); word-break:break-word; }
.list .ok { color:#7ee2a8; } .list .bad { color:#ff9a92; } .list pre { white-space:pre-wrap; margin:4px 0 0; font-size:12px; color:var(--muted); }
`;

export const PAGE_SCRIPT = `'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const state = { now: 0, finishedLimit: 200, allocations: new Map(), evaluations: new Map(), execSessions: new Map(), problems: [], selected: null, connection: null };
  const el = (tag, attrs, ...children) => {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === 'class') node.className = value; else node.setAttribute(key, value);
    }
    for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    return node;
  };
  const pad = (n, w = 2) => String(n).padStart(w, '0');
  const clock = (t) => { const d = new Date(t); return pad(d.getUTCHours()) + ':' + pad(d.getUTCMinutes()) + ':' + pad(d.getUTCSeconds()) + '.' + pad(d.getUTCMilliseconds(), 3); };
  const day = (t) => new Date(t).toISOString().slice(0, 10);
  const relative = (t) => {
    const d = Math.round((Date.parse(t) - state.now) / 100) / 10;
    return d === 0 ? 'now' : d > 0 ? 'in ' + d + 's' : Math.abs(d) + 's ago';
  };
  const when = (t) => t === null || t === undefined ? '—' : clock(t) + ' UTC (' + relative(t) + ')';
  const shortId = (id) => id.slice(0, 8);
  const CONNECTION = { connecting: 'connecting', streaming: 'streaming events', resyncing: 'listing allocations (resync)', backingOff: 'connection lost, retrying', stopped: 'stopped' };

  function apply(message) {
    if (message.now) state.now = Date.parse(message.now);
    switch (message.type) {
      case 'snapshot':
        state.finishedLimit = message.finishedLimit;
        state.allocations = new Map(message.allocations.map((a) => [a.id, a]));
        state.evaluations = new Map(message.evaluations.map((e) => [e.id, e]));
        state.execSessions = new Map(message.execSessions.map((s) => [s.id, s]));
        state.problems = message.problems;
        state.connection = message.connection;
        break;
      case 'allocation':
        // Re-inserted, so the finished ones stay in the order they finished, as on the server.
        state.allocations.delete(message.allocation.id);
        state.allocations.set(message.allocation.id, message.allocation);
        trimFinished();
        break;
      case 'evaluation': state.evaluations.set(message.evaluation.id, message.evaluation); break;
      case 'execSession': state.execSessions.set(message.execSession.id, message.execSession); break;
      case 'problem': state.problems = [...state.problems, message.problem].slice(-50); break;
      case 'connection': state.connection = message.connection; break;
    }
  }

  // The server keeps the latest finished allocations only: so does the page.
  function trimFinished() {
    const finished = [...state.allocations.values()].filter((a) => a.finished);
    for (const a of finished.slice(0, Math.max(0, finished.length - state.finishedLimit))) state.allocations.delete(a.id);
  }

  function renderConnection() {
    const c = state.connection; if (!c) return;
    const pill = $('connection');
    pill.dataset.state = c.state;
    let text = CONNECTION[c.state] || c.state;
    if (c.state === 'streaming' && c.index) text += ' · index ' + c.index;
    if (c.state === 'backingOff') text += ' · attempt ' + c.attempt + (c.lastError ? ' · ' + c.lastError : '');
    pill.textContent = text;
    $('clock').textContent = state.now ? day(state.now) + ' ' + clock(state.now) + ' UTC' : '';
  }

  function verdictText(a) {
    if (!a.verdict) return a.state;
    if (a.verdict.healthy === null) return 'stopped';
    return a.verdict.healthy ? 'healthy' : 'unhealthy';
  }

  function renderList() {
    const filter = $('filter').value.trim().toLowerCase();
    const jobs = new Map();
    for (const a of state.allocations.values()) {
      if (filter && ![a.jobId, a.name || '', a.id, a.namespace].some((s) => s.toLowerCase().includes(filter))) continue;
      const job = a.namespace + '/' + a.jobId;
      if (!jobs.has(job)) jobs.set(job, new Map());
      const version = a.jobVersion === null ? '?' : a.jobVersion;
      const versions = jobs.get(job);
      if (!versions.has(version)) versions.set(version, []);
      versions.get(version).push(a);
    }
    const box = $('allocations');
    box.replaceChildren();
    for (const job of [...jobs.keys()].sort()) {
      box.append(el('div', { class: 'job' }, job));
      const versions = jobs.get(job);
      for (const version of [...versions.keys()].sort((x, y) => Number(y) - Number(x))) {
        const allocs = versions.get(version).sort((x, y) => (x.name || '').localeCompare(y.name || '') || x.id.localeCompare(y.id));
        const deployment = allocs.find((a) => a.deploymentId);
        const counts = new Map();
        for (const a of allocs) counts.set(verdictText(a), (counts.get(verdictText(a)) || 0) + 1);
        const summary = [...counts].map(([kind, n]) => n + ' ' + kind).join(', ');
        box.append(el('div', { class: 'version' }, 'version ' + version + (deployment ? ' · deployment ' + shortId(deployment.deploymentId) : '') + ' · ' + summary));
        for (const a of allocs) {
          const button = el('button', { class: 'alloc' + (a.finished ? ' finished' : '') + (a.id === state.selected ? ' selected' : ''), type: 'button', title: a.id },
            el('span', { class: 'badge', 'data-state': verdictText(a) }, verdictText(a)),
            el('span', { class: 'name' }, a.name || a.id),
            el('span', { class: 'id' }, shortId(a.id)));
          button.addEventListener('click', () => { state.selected = a.id; history.replaceState(null, '', '#' + encodeURIComponent(a.id)); render(); });
          box.append(button);
        }
      }
    }
    $('empty').hidden = state.allocations.size > 0;
  }

  function row(list, term, value) { list.append(el('dt', {}, term), el('dd', {}, value)); }

  function renderDetail() {
    const a = state.selected && state.allocations.get(state.selected);
    $('nothing').hidden = !!a; $('selected').hidden = !a;
    if (!a) return;
    $('title').textContent = a.name || a.id;
    $('subtitle').textContent = 'allocation ' + a.id + ' · job ' + a.namespace + '/' + a.jobId + ' v' + (a.jobVersion === null ? '?' : a.jobVersion) +
      ' · group ' + a.taskGroup + (a.deploymentId ? ' · deployment ' + a.deploymentId : '') + ' · client ' + a.clientStatus + ', desired ' + a.desiredStatus;
    const v = $('verdict');
    v.replaceChildren();
    const kind = verdictText(a);
    v.className = 'verdict ' + kind;
    if (!a.verdict) {
      v.append(el('strong', {}, 'Not judged yet: ' + a.state), ' — ',
        a.healthyAt !== null ? 'healthy ' + relative(a.healthyAt) + ' if nothing changes' : 'waiting for every task to run', ', deadline ' + relative(a.deadlineAt) + '.');
    } else if (a.verdict.healthy === null) {
      v.append(el('strong', {}, 'Stopped'), ' at ' + clock(a.verdict.at) + ' UTC: desired status ' + a.desiredStatus + ', no verdict.');
    } else {
      v.append(el('strong', {}, (a.verdict.healthy ? 'Healthy' : 'Unhealthy') + ' at ' + clock(a.verdict.at) + ' UTC'));
      if (!a.verdict.healthy && a.verdict.reasons.length === 0) v.append(' — the client marked the allocation failed (no task to blame).');
      if (a.verdict.reasons.length) v.append(el('ul', {}, ...a.verdict.reasons.map((r) => el('li', {}, el('span', { class: 'task' }, r.task), ': ', r.reason))));
    }
    if (a.rejected) v.append(el('div', { class: 'muted' }, 'Last update ignored: ' + a.rejected));
    for (const node of document.querySelectorAll('svg.chart .node')) node.classList.toggle('current', node.dataset.state === a.state);
    const t = a.lastTransition;
    // The last move: its arrow and its label (guards; the full transition in the tooltip).
    for (const edge of document.querySelectorAll('svg.chart [data-from]')) edge.classList.toggle('taken', !!t && edge.dataset.from === t.from && edge.dataset.to === t.to);
    const times = $('times'); times.replaceChildren();
    row(times, 'watching since', when(a.watchingSince));
    row(times, 'latest task start', when(a.latestStart));
    row(times, a.verdict && a.verdict.healthy ? 'became healthy' : 'becomes healthy', a.healthyAt === null ? '— (not every task is running)' : when(a.healthyAt));
    if (a.policy.useChecks && a.policy.checks.length) row(times, 'checks passing since', when(a.checksPassingSince));
    row(times, 'healthy deadline', when(a.deadlineAt));
    if (t) row(times, 'last move', t.from + ' → ' + t.to + ' at ' + clock(t.at) + ' UTC');
    const policy = $('policy'); policy.replaceChildren();
    row(policy, 'from', { update: 'update block (deployment)', migrate: 'migrate block', 'opt-in': 'opt-in policy' }[a.policy.source] || a.policy.source);
    row(policy, 'health_check', a.policy.useChecks ? 'checks' : 'task_states');
    row(policy, 'min_healthy_time', a.policy.minHealthyTimeMs / 1000 + 's');
    row(policy, 'healthy_deadline', a.policy.healthyDeadlineMs / 1000 + 's');
    row(policy, 'expected checks', a.policy.checks.length ? a.policy.checks.map((c) => (c.task || 'group') + '/' + c.service + '/' + c.name + ' (' + c.onUpdate + ')').join(', ') : 'none');
    const tasks = $('tasks').tBodies[0]; tasks.replaceChildren();
    for (const task of a.tasks) {
      tasks.append(el('tr', {}, el('td', {}, task.name), el('td', { class: task.failed ? 'failed' : '' }, task.state + (task.failed ? ' (failed)' : '')),
        el('td', {}, task.restarts), el('td', {}, task.startedAt ? clock(task.startedAt) : '—'), el('td', {}, task.finishedAt ? clock(task.finishedAt) : '—'),
        el('td', {}, (task.hook || 'main') + (task.sidecar ? ', sidecar' : ''))));
    }
    $('checksbox').hidden = a.checks.length === 0;
    const checks = $('checks').tBodies[0]; checks.replaceChildren();
    for (const c of a.checks) checks.append(el('tr', {}, el('td', {}, c.task || 'group'), el('td', {}, c.service), el('td', {}, c.name), el('td', {}, c.status)));
  }

  function renderSide() {
    const evaluations = $('evaluations'); evaluations.replaceChildren();
    for (const e of [...state.evaluations.values()].reverse()) {
      const item = el('li', {}, el('span', { class: e.outcome ? (e.outcome.ok ? 'ok' : 'bad') : '' }, shortId(e.id) + ' ' + (e.status || e.state)), e.jobId ? ' · ' + e.jobId : '');
      if (e.outcome) item.append(el('pre', {}, e.outcome.message));
      evaluations.append(item);
    }
    if (!state.evaluations.size) evaluations.append(el('li', { class: 'muted' }, 'none monitored'));
    const sessions = $('execSessions'); sessions.replaceChildren();
    for (const s of [...state.execSessions.values()].reverse()) sessions.append(el('li', {}, s.id + ' · ' + shortId(s.allocId) + '/' + s.task + ' · ' + (s.outcome || s.state)));
    if (!state.execSessions.size) sessions.append(el('li', { class: 'muted' }, 'none'));
    const problems = $('problems'); problems.replaceChildren();
    for (const p of [...state.problems].reverse()) problems.append(el('li', {}, el('span', { class: 'bad' }, p.kind), ' ' + clock(p.at) + ' ', el('pre', {}, p.message)));
    if (!state.problems.length) problems.append(el('li', { class: 'muted' }, 'none'));
  }

  let queued = false;
  function render() {
    queued = false;
    // The allocation named in the address (#<id>), else the first still being judged, else any.
    if (state.selected === null || !state.allocations.has(state.selected)) {
      const all = [...state.allocations.values()];
      const named = state.allocations.get(decodeURIComponent(location.hash.slice(1)));
      const pick = named || all.find((a) => !a.finished) || all[0];
      state.selected = pick ? pick.id : null;
    }
    renderConnection(); renderList(); renderDetail(); renderSide();
  }
  const schedule = () => { if (!queued) { queued = true; requestAnimationFrame(render); } };

  let socket = null;
  function connect() {
    if (socket && socket.readyState <= WebSocket.OPEN) return;
    $('offline').hidden = true;
    socket = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/api/live');
    socket.addEventListener('message', (event) => {
      try { apply(JSON.parse(event.data)); } catch (error) { console.error('inspector: bad message', error); return; }
      schedule();
    });
    socket.addEventListener('close', () => { $('offline').hidden = false; });
  }
  $('reconnect').addEventListener('click', connect);
  // Back on the page or the network: try again without being asked.
  window.addEventListener('focus', connect);
  window.addEventListener('online', connect);
  $('filter').addEventListener('input', schedule);
  connect();
})();
`;
