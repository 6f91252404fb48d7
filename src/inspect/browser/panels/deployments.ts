/**
 * Deployments, as Nomad's UI shows their progress: per task group a bar of healthy, unhealthy,
 * placed-not-yet-healthy and still-to-place allocations out of the desired count, the counts,
 * canaries and promotion, the progress deadline; and the allocations of it Warden judges.
 */
import type { DeploymentGroupInfo, DeploymentInfo } from '../../schema.js';
import { definitionList, el } from '../dom.js';
import { instant, relativeText } from '../format.js';
import type { PageState } from '../store.js';
import { deploymentTitle, deploymentsShown, groupCounts, progressSegments } from '../views.js';
import { allocationBadge } from './allocationBadge.js';
import type { PanelContext, SidePanel } from './panel.js';

function bar(group: DeploymentGroupInfo): HTMLDivElement {
  const segments = progressSegments(group);
  const total = segments.reduce((sum, segment) => sum + segment.count, 0);
  const node = el('div', { class: 'bar', role: 'img', 'aria-label': `${group.healthy} healthy, ${group.unhealthy} unhealthy, ${group.placed} placed of ${group.desiredTotal} desired` });
  for (const segment of segments) {
    const part = el('span', { class: 'segment', 'data-kind': segment.kind, title: `${segment.count} ${segment.kind}` });
    // Through the CSSOM: the page's policy allows no inline style attribute.
    part.style.flexGrow = String(segment.count / Math.max(1, total));
    node.append(part);
  }
  return node;
}

function groupView(deployment: DeploymentInfo, group: DeploymentGroupInfo, state: PageState, now: number, context: PanelContext): HTMLDivElement {
  const deadline = instant(group.requireProgressBy);
  const running = deployment.status === 'running';
  const allocations = [...state.allocations.values()].filter((a) => a.deploymentId === deployment.id && a.taskGroup === group.name);
  return el(
    'div',
    { class: 'group' },
    el('div', { class: 'group-name' }, group.name),
    bar(group),
    definitionList(groupCounts(group)),
    running && deadline !== null && el('div', { class: 'muted deadline' }, `progress deadline ${relativeText(deadline, now)}`),
    allocations.length > 0 &&
      el(
        'div',
        { class: 'chips' },
        ...allocations.map((a) => {
          const chip = el('button', { type: 'button', class: a.id === context.selected ? 'chip selected' : 'chip', title: a.name ?? a.id }, allocationBadge(a));
          chip.addEventListener('click', () => context.select(a.id));
          return chip;
        }),
      ),
  );
}

export const deploymentsPanel: SidePanel = {
  id: 'deployments',
  title: 'Deployments',
  render: (state, context) => {
    const shown = deploymentsShown(state);
    if (shown.length === 0) return [el('p', { class: 'muted' }, 'none seen yet')];
    return shown.map((deployment) =>
      el(
        'div',
        { class: 'deployment' },
        el('div', { class: 'deployment-head' }, el('span', { class: 'name' }, deploymentTitle(deployment)), el('span', { class: 'status', 'data-status': deployment.status }, deployment.status)),
        deployment.statusDescription !== '' && el('div', { class: 'muted' }, deployment.statusDescription),
        ...deployment.groups.map((group) => groupView(deployment, group, state, state.now, context)),
      ),
    );
  },
};
