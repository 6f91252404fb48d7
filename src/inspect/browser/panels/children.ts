/** The supervisor's children: evaluations it monitors and exec sessions it runs; and its recent problems. Newest first. */
import { el } from '../dom.js';
import { clockText, instant, shortId } from '../format.js';
import type { PageState } from '../store.js';
import type { SidePanel } from './panel.js';

function listPanel<T>(id: string, title: string, items: (state: PageState) => Map<string, T>, none: string, item: (value: T) => HTMLLIElement): SidePanel {
  return {
    id,
    title,
    render: (state) => {
      const values = [...items(state).values()].reverse();
      return values.length === 0 ? [el('p', { class: 'muted' }, none)] : [el('ul', { class: 'list' }, ...values.map(item))];
    },
  };
}

export const evaluationsPanel = listPanel('evaluations', 'Evaluations', (state) => state.evaluations, 'none monitored', (e) =>
  el(
    'li',
    {},
    el('span', { class: e.outcome === null ? '' : e.outcome.ok ? 'ok' : 'bad' }, `${shortId(e.id)} ${e.status ?? e.state}`),
    e.jobId === null ? '' : ` · ${e.jobId}`,
    e.outcome !== null && el('pre', {}, e.outcome.message),
  ),
);

export const execSessionsPanel = listPanel('execSessions', 'Exec sessions', (state) => state.execSessions, 'none', (s) =>
  el('li', {}, `${s.id} · ${shortId(s.allocId)}/${s.task} · ${s.outcome ?? s.state}`),
);

export const problemsPanel = listPanel('problems', 'Problems', (state) => state.problems, 'none', (p) => {
  const at = instant(p.at);
  return el('li', {}, el('span', { class: 'bad' }, p.kind), ` ${at === null ? '' : clockText(at)} `, el('pre', {}, p.message));
});
