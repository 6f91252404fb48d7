/**
 * A state chart as SVG, laid out from the machine definition: the machine is first drawn as the
 * Mermaid text `npm run visualize` commits (src/visualize/mermaid.ts reads machine.root), and that
 * text is read back here into states and transitions, so the inspector's chart and the committed
 * one cannot disagree. Layered left to right: the initial state first, each state one column
 * right of the furthest state that leads to it without going back, final states in the last
 * column. Transitions between the same two states are one arrow, labelled with every guard.
 * The page highlights nodes and arrows by their data- attributes; the SVG has no inline styles.
 */
import type { AnyStateMachine } from 'xstate';
import { toMermaid } from '../visualize/mermaid.js';
import { escapeHtml } from './escape.js';

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

export interface StateChart extends ChartGraph {
  readonly svg: string;
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

/** Column of each state: the longest path to it from the initial state, back edges (found depth first) left out. */
function ranks(graph: ChartGraph): Map<string, number> {
  // Successors in declaration order: of two states on a cycle, the one declared first comes first.
  const outgoing = (state: string): string[] =>
    graph.edges
      .filter((edge) => edge.from === state)
      .map((edge) => edge.to)
      .sort((a, b) => graph.states.indexOf(a) - graph.states.indexOf(b));
  const order: string[] = [];
  const onPath = new Set<string>();
  const done = new Set<string>();
  const forward: ChartEdge[] = [];
  const visit = (state: string): void => {
    onPath.add(state);
    for (const next of outgoing(state)) {
      if (onPath.has(next)) continue;
      forward.push(...graph.edges.filter((edge) => edge.from === state && edge.to === next));
      if (!done.has(next)) visit(next);
    }
    onPath.delete(state);
    done.add(state);
    order.unshift(state);
  };
  for (const state of [...(graph.initial ? [graph.initial] : []), ...graph.states]) if (!done.has(state)) visit(state);
  const rank = new Map<string, number>(graph.states.map((state) => [state, 0]));
  for (const state of order) {
    for (const edge of forward.filter((candidate) => candidate.from === state)) {
      rank.set(edge.to, Math.max(rank.get(edge.to) ?? 0, (rank.get(state) ?? 0) + 1));
    }
  }
  const last = Math.max(0, ...graph.states.filter((state) => !graph.finals.includes(state)).map((state) => (rank.get(state) ?? 0) + 1));
  for (const state of graph.finals) rank.set(state, last);
  return rank;
}

const NODE_W = 150;
const NODE_H = 40;
const COLUMN = 250;
const ROW = 110;
const MARGIN = 90;

interface Point {
  readonly x: number;
  readonly y: number;
}

function number(value: number): string {
  return String(Math.round(value * 10) / 10);
}

/** The graph laid out and drawn. */
export function stateChart(machine: AnyStateMachine): StateChart {
  const graph = chartGraph(machine);
  const rank = ranks(graph);
  const columns = new Map<number, string[]>();
  for (const state of graph.states) {
    const column = rank.get(state) ?? 0;
    columns.set(column, [...(columns.get(column) ?? []), state]);
  }
  const tallest = Math.max(1, ...[...columns.values()].map((column) => column.length));
  const width = MARGIN * 2 + NODE_W + COLUMN * Math.max(0, columns.size - 1);
  const height = MARGIN * 2 + NODE_H + ROW * (tallest - 1);
  const middle = height / 2;
  const position = new Map<string, Point>();
  for (const [column, states] of columns) {
    states.forEach((state, i) => {
      position.set(state, { x: MARGIN + NODE_W / 2 + column * COLUMN, y: middle + (i - (states.length - 1) / 2) * ROW });
    });
  }
  const at = (state: string): Point => position.get(state) ?? { x: 0, y: 0 };
  const parts: string[] = [];
  // Labels go on top of the states, so that a long one beside a short arrow stays readable.
  const labels: string[] = [];
  graph.edges.forEach((edge, i) => {
    const a = at(edge.from);
    const b = at(edge.to);
    const back = b.x < a.x || (b.x === a.x && b.y < a.y);
    const span = Math.abs(b.x - a.x) / COLUMN;
    const start = { x: a.x + (back ? -NODE_W / 4 : NODE_W / 2), y: a.y + (back ? NODE_H / 2 : 0) };
    const end = { x: b.x + (back ? NODE_W / 4 : -NODE_W / 2), y: b.y + (back ? NODE_H / 2 : 0) };
    // Arrows that skip a column bow around the states in between: upwards to targets above the
    // source, downwards to those below, alternating for targets level with it.
    const skips = span > 1.01;
    const side = back ? 1 : b.y < a.y ? -1 : b.y > a.y ? 1 : i % 2 === 0 ? -1 : 1;
    const bow = back ? 30 + 28 * span : skips ? 34 * span : 0;
    const control = { x: (start.x + end.x) / 2, y: (start.y + end.y) / 2 + side * bow };
    // Level neighbours: the label above both states; otherwise at the middle of the curve.
    const level = bow === 0 && a.y === b.y;
    const label = level
      ? { x: (start.x + end.x) / 2, y: a.y - NODE_H / 2 - 2 }
      : { x: (start.x + 2 * control.x + end.x) / 4, y: (start.y + 2 * control.y + end.y) / 4 - 4 };
    const ends = `data-from="${escapeHtml(edge.from)}" data-to="${escapeHtml(edge.to)}"`;
    const title = escapeHtml(edge.labels.join('\n'));
    const text = escapeHtml(edge.labels.map((full) => /\[(.*?)\]/.exec(full)?.[1] ?? full.split(' / ')[0]).join(' | '));
    parts.push(
      `<g class="edge" ${ends}><title>${title}</title>` +
        `<path d="M${number(start.x)},${number(start.y)} Q${number(control.x)},${number(control.y)} ${number(end.x)},${number(end.y)}" marker-end="url(#arrow)"/></g>`,
    );
    labels.push(`<text class="label" ${ends} x="${number(label.x)}" y="${number(label.y)}"><title>${title}</title>${text}</text>`);
  });
  for (const state of graph.states) {
    const { x, y } = at(state);
    const kind = graph.finals.includes(state) ? ' final' : state === graph.initial ? ' initial' : '';
    parts.push(
      `<g class="node${kind}" data-state="${escapeHtml(state)}"><rect x="${number(x - NODE_W / 2)}" y="${number(y - NODE_H / 2)}" width="${NODE_W}" height="${NODE_H}" rx="${NODE_H / 2}"/>` +
        `<text x="${number(x)}" y="${number(y + 5)}">${escapeHtml(state)}</text></g>`,
    );
  }
  if (graph.initial) {
    const { x, y } = at(graph.initial);
    parts.unshift(`<g class="start"><circle cx="${number(x - NODE_W / 2 - 40)}" cy="${number(y)}" r="7"/><path d="M${number(x - NODE_W / 2 - 33)},${number(y)} H${number(x - NODE_W / 2)}" marker-end="url(#arrow)"/></g>`);
  }
  const svg =
    `<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${number(width)} ${number(height)}" role="img" aria-label="${escapeHtml(machine.id)} state chart">` +
    `<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>` +
    `${parts.join('')}${labels.join('')}</svg>`;
  return { ...graph, svg };
}
