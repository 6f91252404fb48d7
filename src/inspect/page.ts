/**
 * The inspector's page: one HTML document whose script and style (/app.js, /app.css) are built from
 * src/inspect/browser/ and served by the inspector itself (no CDN, nothing fetched from elsewhere).
 * The chart comes laid out from the machine definition (chartSvg.ts); the script fills in the rest,
 * putting every value from the cluster on the page as text.
 */
import type { StateChart } from './chartSvg.js';

export function pageHtml(chart: StateChart): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Warden inspector</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
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
<div id="schema" class="banner" hidden></div>
<main>
  <nav aria-label="Allocations">
    <input id="filter" type="search" placeholder="Filter by job, group, name or id" aria-label="Filter allocations">
    <div id="allocations"></div>
    <p id="empty" class="muted">No allocation is being judged yet.</p>
  </nav>
  <section id="detail" aria-label="Allocation">
    <div id="nothing" class="muted">Select an allocation to see its health state chart and why it is (un)healthy.</div>
    <article id="selected" hidden>
      <h2 id="title"></h2>
      <div id="subtitle" class="muted"></div>
      <div id="verdict" class="verdict"></div>
      <div class="chartbox">${chart.svg}</div>
      <div class="columns">
        <div><h3>Times</h3><div id="times"></div></div>
        <div><h3>Policy</h3><div id="policy"></div></div>
      </div>
      <h3>Tasks</h3>
      <div class="scroll"><table id="tasks"><thead><tr><th>task</th><th>state</th><th>restarts</th><th>started</th><th>finished</th><th>lifecycle</th></tr></thead><tbody></tbody></table></div>
      <div id="checksbox"><h3>Checks</h3><div class="scroll"><table id="checks"><thead><tr><th>task</th><th>service</th><th>check</th><th>status</th></tr></thead><tbody></tbody></table></div></div>
      <h3>Timeline</h3>
      <div id="timeline"></div>
    </article>
  </section>
  <aside id="panels" aria-label="Deployments, evaluations, exec sessions, problems"></aside>
</main>
</body>
</html>
`;
}

/** The tab's icon: a state chart's three states, the last one reached. */
export const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#171d25"/>' +
  '<circle cx="9" cy="9" r="4" fill="#8c9aab"/><circle cx="23" cy="9" r="4" fill="#5eb1ff"/><circle cx="16" cy="23" r="5" fill="#3fb950"/>' +
  '<path d="M13 9h6M11 12l3 7M21 12l-3 7" stroke="#8c9aab" stroke-width="2" fill="none"/></svg>';
