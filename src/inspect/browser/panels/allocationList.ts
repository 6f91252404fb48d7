/** The left column: allocations by job and version, each a button that shows it. */
import { el } from '../dom.js';
import { shortId } from '../format.js';
import type { PageState } from '../store.js';
import { groupAllocations } from '../views.js';
import { allocationBadge } from './allocationBadge.js';
import type { PanelContext } from './panel.js';

export function renderAllocationList(box: HTMLElement, empty: HTMLElement, state: PageState, filter: string, context: PanelContext): void {
  const nodes: Node[] = [];
  for (const { job, versions } of groupAllocations(state.allocations.values(), filter)) {
    nodes.push(el('div', { class: 'job' }, job));
    for (const { version, deploymentId, summary, allocations } of versions) {
      const deployment = deploymentId === null ? '' : ` · deployment ${shortId(deploymentId)}`;
      nodes.push(el('div', { class: 'version' }, `version ${version ?? '?'}${deployment} · ${summary}`));
      for (const a of allocations) {
        const classes = ['alloc', a.finished ? 'finished' : '', a.id === context.selected ? 'selected' : ''].filter(Boolean).join(' ');
        const button = el('button', { class: classes, type: 'button', title: a.id, 'data-id': a.id }, allocationBadge(a), el('span', { class: 'name' }, a.name ?? a.id), el('span', { class: 'id' }, shortId(a.id)));
        button.addEventListener('click', () => context.select(a.id));
        nodes.push(button);
      }
    }
  }
  box.replaceChildren(...nodes);
  empty.hidden = nodes.length > 0;
  empty.textContent = state.allocations.size === 0 ? 'No allocation is being judged yet.' : 'No allocation matches the filter.';
}
