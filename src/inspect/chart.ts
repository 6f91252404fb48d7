/**
 * A machine's states and transitions, read from the Mermaid text `npm run visualize` commits
 * (src/visualize/mermaid.ts reads machine.root), so the inspector's chart and the committed one
 * cannot disagree; then grouped for drawing. Transitions between the same two states are one
 * arrow, labelled with every guard; a transition that every waiting (non-final) state has alike —
 * same target, same label — is one arrow from a box around those states ("from any of these
 * states") instead of one arrow per state. Laid out and drawn by chartLayout.ts and chartSvg.ts.
 */
import type { AnyStateMachine } from 'xstate';
import { toMermaid } from '../visualize/mermaid.js';

export interface ChartEdge {
  readonly from: string;
  readonly to: string;
  /** One label per transition, `event [guard] / actions` as in the Mermaid chart. */
  readonly labels: readonly string[];
}

export interface ChartGraph {
  readonly initial: string | undefined;
  readonly states: readonly string[];
  readonly finals: readonly string[];
  readonly edges: readonly ChartEdge[];
}

/** An arrow as drawn: from one state, or (grouped) from the box around `group`. */
export interface ChartArrow {
  readonly from: readonly string[];
  readonly to: string;
  readonly grouped: boolean;
  /** The full transition labels (tooltip). */
  readonly labels: readonly string[];
  /** What is written on the arrow: each transition's short label, wrapped. */
  readonly lines: readonly string[];
}

export interface ChartDiagram extends ChartGraph {
  /** The states inside the "from any of these states" box (empty: no box). */
  readonly group: readonly string[];
  readonly arrows: readonly ChartArrow[];
}

const EDGE = /^\s*(\S+) --> (\S+)(?: : (.*))?$/;

/** States and transitions of a machine's Mermaid chart; a transition back to its own state is left out. */
export function chartGraph(machine: AnyStateMachine): ChartGraph {
  const states: string[] = [];
  const finals: string[] = [];
  const edges = new Map<string, { from: string; to: string; labels: string[] }>();
  let initial: string | undefined;
  const see = (state: string): void => {
    if (!states.includes(state)) states.push(state);
  };
  for (const line of toMermaid(machine).split('\n')) {
    const match = EDGE.exec(line);
    if (!match) continue;
    const [, from = '', to = '', label] = match;
    if (from === '[*]') {
      initial ??= to;
      see(to);
    } else if (to === '[*]') {
      finals.push(from);
      see(from);
    } else {
      see(from);
      see(to);
      if (from === to) continue;
      const key = `${from}\u0000${to}`;
      const edge = edges.get(key) ?? { from, to, labels: [] };
      edge.labels.push(label?.trim() ?? '');
      edges.set(key, edge);
    }
  }
  // In the order the machine declares them (nested states, drawn flat, after).
  const declared = Object.keys(machine.root.states);
  const place = (state: string): number => (declared.includes(state) ? declared.indexOf(state) : declared.length);
  const byDeclaration = (a: string, b: string): number => place(a) - place(b);
  return { initial, states: states.sort(byDeclaration), finals: finals.sort(byDeclaration), edges: [...edges.values()] };
}

/** `after readRetry` for xstate.after.readRetry.evaluation.retrying, `done`/`error` for an invoked actor's. */
function eventWords(event: string): string {
  const after = /^xstate\.after\.([^.]+)\./.exec(event);
  if (after) return `after ${after[1]}`;
  if (event.startsWith('xstate.done.actor.')) return 'done';
  if (event.startsWith('xstate.error.actor.')) return 'error';
  return event;
}

/**
 * A guard as XState's Mermaid text writes it, in words: `and(not(allReady), someTaskRunning)` reads
 * "not allReady and someTaskRunning". Anything it cannot read stays as it is.
 */
export function guardWords(guard: string): string {
  let at = 0;
  const expression = (): string => {
    const name = /^[^(),\s]+/.exec(guard.slice(at))?.[0] ?? '';
    at += name.length;
    if (guard[at] !== '(') return name;
    at += 1;
    const operands: string[] = [];
    while (at < guard.length && guard[at] !== ')') {
      operands.push(expression());
      while (guard[at] === ',' || guard[at] === ' ') at += 1;
    }
    at += 1;
    if (name === 'not' && operands.length === 1) return `not ${operands[0]}`;
    if ((name === 'and' || name === 'or') && operands.length > 0) return operands.join(` ${name} `);
    return `${name}(${operands.join(', ')})`;
  };
  const words = expression();
  return at === guard.length ? words : guard;
}

/** What an arrow says of a transition: its guard, with its event where the machine has several. */
export function shortLabel(label: string, severalEvents: boolean): string {
  const [head = ''] = label.split(' / ');
  const match = /^(\S+)(?: \[(.*)\])?$/.exec(head.trim());
  if (!match) return head;
  const event = eventWords(match[1] ?? '');
  const guard = match[2] === undefined ? undefined : guardWords(match[2]);
  if (guard === undefined) return event;
  return severalEvents ? `${event} [${guard}]` : guard;
}

/** A label in lines of about `width` characters, broken at spaces. */
export function wrap(text: string, width = 18): string[] {
  const lines: string[] = [];
  for (const word of text.split(' ')) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= width) lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines;
}

function eventOf(label: string): string {
  return label.split(' ')[0] ?? '';
}

/**
 * The arrows to draw. A transition that every waiting state other than its target has, with the
 * same label, is drawn once from the box around them (only toward a state outside the box: a
 * final state); the rest one arrow per pair of states.
 */
export function chartDiagram(graph: ChartGraph): ChartDiagram {
  const waiting = graph.states.filter((state) => !graph.finals.includes(state));
  const severalEvents = new Set(graph.edges.flatMap((edge) => edge.labels.map(eventOf))).size > 1;
  const fromEvery = (to: string, label: string): boolean =>
    waiting.length >= 2 && waiting.every((from) => graph.edges.some((edge) => edge.from === from && edge.to === to && edge.labels.includes(label)));
  const grouped = new Map<string, string[]>();
  for (const edge of graph.edges) {
    if (!graph.finals.includes(edge.to)) continue;
    for (const label of edge.labels) {
      const labels = grouped.get(edge.to) ?? [];
      if (!labels.includes(label) && fromEvery(edge.to, label)) grouped.set(edge.to, [...labels, label]);
    }
  }
  const arrow = (from: string[], to: string, labels: string[], isGrouped: boolean): ChartArrow => ({
    from,
    to,
    grouped: isGrouped,
    labels,
    lines: labels.flatMap((label) => wrap(shortLabel(label, severalEvents))),
  });
  const declared = (state: string): number => graph.states.indexOf(state);
  const arrows: ChartArrow[] = [...grouped]
    .sort(([a], [b]) => declared(a) - declared(b))
    .map(([to, labels]) => arrow(waiting, to, labels, true));
  for (const edge of graph.edges) {
    const rest = edge.labels.filter((label) => !grouped.get(edge.to)?.includes(label));
    if (rest.length > 0) arrows.push(arrow([edge.from], edge.to, rest, false));
  }
  return { ...graph, group: grouped.size > 0 ? waiting : [], arrows };
}
