/** The shown allocation's timeline: each step of its health machine, oldest first, as Stately's inspector lists events. */
import type { TimelineEntry, TimelineInfo } from '../../schema.js';
import { el } from '../dom.js';
import { clockText, instant } from '../format.js';

const CAUSES: Readonly<Record<TimelineEntry['cause'], string>> = {
  tracked: 'first seen',
  allocation: 'allocation update',
  checks: 'checks update',
  timer: 'timer',
};

function step(entry: TimelineEntry): HTMLLIElement {
  const at = instant(entry.at);
  const move = entry.move === null ? el('span', { class: 'stay' }, `stays ${entry.state}`) : el('span', { class: 'move', 'data-state': entry.move.to }, `${entry.move.from} → ${entry.move.to}`);
  return el(
    'li',
    { class: 'step', 'data-cause': entry.cause },
    el('div', { class: 'when' }, el('span', { class: 'time' }, at === null ? '—' : clockText(at)), el('span', { class: 'cause' }, CAUSES[entry.cause])),
    el('div', { class: 'what' }, move, el('ul', { class: 'changes' }, ...entry.changes.map((change) => el('li', {}, change)))),
  );
}

/** undefined: asked for, not here yet; null: the server keeps none. */
export function renderTimeline(timeline: TimelineInfo | null | undefined): Node[] {
  if (timeline === undefined) return [el('p', { class: 'muted' }, 'Loading…')];
  if (timeline === null) return [el('p', { class: 'muted' }, 'No timeline for this allocation (the inspector records one from the supervisor\'s inspection events).')];
  return [
    ...(timeline.dropped > 0 ? [el('p', { class: 'muted' }, `${timeline.dropped} earlier step${timeline.dropped === 1 ? '' : 's'} not kept.`)] : []),
    el('ol', { class: 'timeline' }, ...timeline.entries.map(step)),
  ];
}
