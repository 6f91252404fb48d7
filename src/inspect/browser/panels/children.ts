/** The supervisor's children: evaluations it monitors and exec sessions it runs; and its recent problems. */
import { el } from '../dom.js';
import { clockText, instant, shortId } from '../format.js';
import type { SidePanel } from './panel.js';

const none = (text: string): Node[] => [el('p', { class: 'muted' }, text)];

export const evaluationsPanel: SidePanel = {
  id: 'evaluations',
  title: 'Evaluations',
  render: (state) => {
    const evaluations = [...state.evaluations.values()].reverse();
    if (evaluations.length === 0) return none('none monitored');
    return [
      el(
        'ul',
        { class: 'list' },
        ...evaluations.map((e) =>
          el(
            'li',
            {},
            el('span', { class: e.outcome === null ? '' : e.outcome.ok ? 'ok' : 'bad' }, `${shortId(e.id)} ${e.status ?? e.state}`),
            e.jobId === null ? '' : ` · ${e.jobId}`,
            e.outcome !== null && el('pre', {}, e.outcome.message),
          ),
        ),
      ),
    ];
  },
};

export const execSessionsPanel: SidePanel = {
  id: 'execSessions',
  title: 'Exec sessions',
  render: (state) => {
    const sessions = [...state.execSessions.values()].reverse();
    if (sessions.length === 0) return none('none');
    return [el('ul', { class: 'list' }, ...sessions.map((s) => el('li', {}, `${s.id} · ${shortId(s.allocId)}/${s.task} · ${s.outcome ?? s.state}`)))];
  },
};

export const problemsPanel: SidePanel = {
  id: 'problems',
  title: 'Problems',
  render: (state) => {
    const problems = [...state.problems.values()].reverse();
    if (problems.length === 0) return none('none');
    return [
      el(
        'ul',
        { class: 'list' },
        ...problems.map((p) => {
          const at = instant(p.at);
          return el('li', {}, el('span', { class: 'bad' }, p.kind), ` ${at === null ? '' : clockText(at)} `, el('pre', {}, p.message));
        }),
      ),
    ];
  },
};
