/**
 * The middle column: the shown allocation — its verdict in Nomad's words, its state and last move on
 * the chart, times, policy, tasks, checks and timeline.
 */
import type { AllocationInfo } from '../../schema.js';
import { byId, definitionList, el } from '../dom.js';
import { clockText, instant } from '../format.js';
import type { PageState } from '../store.js';
import { policyRows, timeRows, verdictWord, waitingText } from '../views.js';
import { renderTimeline } from './timeline.js';

function at(iso: string | null): string {
  const ms = instant(iso);
  return ms === null ? '—' : clockText(ms);
}

function verdict(a: AllocationInfo, now: number): (Node | string)[] {
  if (a.verdict === null) return [el('strong', {}, `Not judged yet: ${a.state}`), ` — ${waitingText(a, now)}`];
  if (a.verdict.healthy === null) return [el('strong', {}, 'Stopped'), ` at ${at(a.verdict.at)} UTC: desired status ${a.desiredStatus}, no verdict.`];
  const nodes: (Node | string)[] = [el('strong', {}, `${a.verdict.healthy ? 'Healthy' : 'Unhealthy'} at ${at(a.verdict.at)} UTC`)];
  if (!a.verdict.healthy && a.verdict.reasons.length === 0) nodes.push(' — the client marked the allocation failed (no task to blame).');
  if (a.verdict.reasons.length > 0) nodes.push(el('ul', {}, ...a.verdict.reasons.map((r) => el('li', {}, el('span', { class: 'task' }, r.task), ': ', r.reason))));
  return nodes;
}

let centred = '';

/** The current state's node, and the arrow (and its label) of the last move. */
function markChart(a: AllocationInfo): void {
  let current: SVGGElement | undefined;
  for (const node of document.querySelectorAll<SVGGElement>('svg.chart .node')) {
    node.classList.toggle('current', node.dataset.state === a.state);
    if (node.dataset.state === a.state) current = node;
  }
  const move = a.lastTransition;
  for (const arrow of document.querySelectorAll<SVGGElement>('svg.chart [data-from]')) {
    const taken = move !== null && arrow.dataset.to === move.to && (arrow.dataset.from ?? '').split(' ').includes(move.from);
    arrow.classList.toggle('taken', taken);
  }
  // A chart wider than its column scrolls sideways: bring the current state into view when it changes.
  const box = current?.closest<HTMLElement>('.chartbox');
  if (current === undefined || box === null || box === undefined || centred === `${a.id} ${a.state}`) return;
  centred = `${a.id} ${a.state}`;
  const node = current.getBoundingClientRect();
  box.scrollLeft += node.left + node.width / 2 - (box.getBoundingClientRect().left + box.clientWidth / 2);
}

function tasks(a: AllocationInfo): HTMLTableSectionElement {
  return el(
    'tbody',
    {},
    ...a.tasks.map((task) =>
      el(
        'tr',
        {},
        el('td', {}, task.name),
        el('td', { class: task.failed ? 'failed' : '' }, `${task.state}${task.failed ? ' (failed)' : ''}`),
        el('td', {}, task.restarts),
        el('td', {}, at(task.startedAt)),
        el('td', {}, at(task.finishedAt)),
        el('td', {}, `${task.hook ?? 'main'}${task.sidecar ? ', sidecar' : ''}`),
      ),
    ),
  );
}

function checks(a: AllocationInfo): HTMLTableSectionElement {
  return el('tbody', {}, ...a.checks.map((c) => el('tr', {}, el('td', {}, c.task || 'group'), el('td', {}, c.service), el('td', {}, c.name), el('td', { 'data-status': c.status }, c.status))));
}

export function renderDetail(state: PageState, selected: string | null): void {
  const a = selected === null ? undefined : state.allocations.get(selected);
  byId('nothing').hidden = a !== undefined;
  byId('selected').hidden = a === undefined;
  if (a === undefined) return;
  byId('title').textContent = a.name ?? a.id;
  const deployment = a.deploymentId === null ? '' : ` · deployment ${a.deploymentId}`;
  byId('subtitle').textContent =
    `allocation ${a.id} · job ${a.namespace}/${a.jobId} v${a.jobVersion ?? '?'} · group ${a.taskGroup}${deployment} · client ${a.clientStatus}, desired ${a.desiredStatus}`;
  const box = byId('verdict');
  box.className = `verdict ${verdictWord(a)}`;
  box.replaceChildren(...verdict(a, state.now), ...(a.rejected === null ? [] : [el('div', { class: 'muted' }, `Last update ignored: ${a.rejected}`)]));
  markChart(a);
  const move = a.lastTransition;
  byId('times').replaceChildren(definitionList([...timeRows(a, state.now), ...(move === null ? [] : [['last move', `${move.from} → ${move.to} at ${at(move.at)} UTC`] as const])]));
  byId('policy').replaceChildren(definitionList(policyRows(a)));
  byId<HTMLTableElement>('tasks').tBodies[0]?.replaceWith(tasks(a));
  byId('checksbox').hidden = a.checks.length === 0;
  byId<HTMLTableElement>('checks').tBodies[0]?.replaceWith(checks(a));
  const timeline = state.timeline?.allocationId === a.id ? state.timeline.timeline : undefined;
  byId('timeline').replaceChildren(...renderTimeline(timeline));
}
