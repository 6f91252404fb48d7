/**
 * A state chart as SVG, from the machine definition (chart.ts) laid out by ELK (chartLayout.ts).
 * The page highlights states and arrows by their data- attributes (the current state, the last
 * move: `data-from` lists every state an arrow leaves from, so a grouped arrow answers for each);
 * the SVG has no inline styles and every name in it is escaped. Arrows come before labels and
 * labels last, each on an opaque plate, so a label is never crossed by a line.
 */
import type { AnyStateMachine } from 'xstate';
import { chartDiagram, chartGraph, type ChartDiagram } from './chart.js';
import { GROUP_CAPTION, LABEL_FONT_PX, LABEL_LINE_PX, NODE_FONT_PX, layoutChart, type ChartLayout, type Point } from './chartLayout.js';
import { escapeHtml } from './escape.js';

export interface StateChart extends ChartDiagram {
  readonly layout: ChartLayout;
  readonly svg: string;
}

function num(value: number): string {
  return String(Math.round(value * 10) / 10);
}

/** An orthogonal route with its corners rounded (radius at most half of either leg). */
function roundedPath(points: readonly Point[], radius = 8): string {
  const [first, ...rest] = points;
  if (first === undefined) return '';
  let d = `M${num(first.x)},${num(first.y)}`;
  rest.forEach((corner, i) => {
    const before = points[i]!;
    const after = rest[i + 1];
    if (after === undefined) {
      d += ` L${num(corner.x)},${num(corner.y)}`;
      return;
    }
    const inLength = Math.hypot(corner.x - before.x, corner.y - before.y);
    const outLength = Math.hypot(after.x - corner.x, after.y - corner.y);
    const r = Math.min(radius, inLength / 2, outLength / 2);
    const enter = { x: corner.x - ((corner.x - before.x) / (inLength || 1)) * r, y: corner.y - ((corner.y - before.y) / (inLength || 1)) * r };
    const leave = { x: corner.x + ((after.x - corner.x) / (outLength || 1)) * r, y: corner.y + ((after.y - corner.y) / (outLength || 1)) * r };
    d += ` L${num(enter.x)},${num(enter.y)} Q${num(corner.x)},${num(corner.y)} ${num(leave.x)},${num(leave.y)}`;
  });
  return d;
}

function ends(from: readonly string[], to: string): string {
  return `data-from="${escapeHtml(from.join(' '))}" data-to="${escapeHtml(to)}"`;
}

function render(machine: AnyStateMachine, diagram: ChartDiagram, layout: ChartLayout): string {
  const parts: string[] = [];
  if (layout.group) {
    const { x, y, width, height, caption } = layout.group;
    parts.push(
      `<g class="group" data-states="${escapeHtml(diagram.group.join(' '))}"><rect x="${num(x)}" y="${num(y)}" width="${num(width)}" height="${num(height)}" rx="10"/>` +
        `<text x="${num(caption.x)}" y="${num(caption.y + LABEL_FONT_PX)}">${GROUP_CAPTION}</text></g>`,
    );
  }
  if (layout.start) {
    const { x, y, points } = layout.start;
    parts.push(`<g class="start"><circle cx="${num(x)}" cy="${num(y)}" r="7"/><path d="${roundedPath(points)}" marker-end="url(#warden-arrow)"/></g>`);
  }
  for (const { arrow, points } of layout.arrows) {
    const kind = arrow.grouped ? 'edge grouped' : 'edge';
    parts.push(`<g class="${kind}" ${ends(arrow.from, arrow.to)}><title>${escapeHtml(arrow.labels.join('\n'))}</title><path d="${roundedPath(points)}" marker-end="url(#warden-arrow)"/></g>`);
  }
  for (const { state, x, y, width, height } of layout.states) {
    const kind = diagram.finals.includes(state) ? ' final' : state === diagram.initial ? ' initial' : '';
    const inner = kind === ' final' ? `<rect class="inner" x="${num(x + 3)}" y="${num(y + 3)}" width="${num(width - 6)}" height="${num(height - 6)}" rx="${num(height / 2 - 3)}"/>` : '';
    parts.push(
      `<g class="node${kind}" data-state="${escapeHtml(state)}"><rect x="${num(x)}" y="${num(y)}" width="${num(width)}" height="${num(height)}" rx="${num(height / 2)}"/>${inner}` +
        `<text x="${num(x + width / 2)}" y="${num(y + height / 2 + NODE_FONT_PX * 0.35)}">${escapeHtml(state)}</text></g>`,
    );
  }
  for (const { arrow, label } of layout.arrows) {
    if (label === undefined) continue;
    const lines = arrow.lines.map(
      (line, i) => `<text x="${num(label.x + label.width / 2)}" y="${num(label.y + 3 + LABEL_LINE_PX * i + LABEL_FONT_PX)}">${escapeHtml(line)}</text>`,
    );
    parts.push(
      `<g class="label" ${ends(arrow.from, arrow.to)}><title>${escapeHtml(arrow.labels.join('\n'))}</title>` +
        `<rect x="${num(label.x)}" y="${num(label.y)}" width="${num(label.width)}" height="${num(label.height)}" rx="4"/>${lines.join('')}</g>`,
    );
  }
  return (
    `<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${num(layout.width)} ${num(layout.height)}" width="${num(layout.width)}" height="${num(layout.height)}" role="img" aria-label="${escapeHtml(machine.id)} state chart">` +
    '<defs>' +
    '<marker id="warden-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker>' +
    '<marker id="warden-arrow-taken" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker>' +
    `</defs>${parts.join('')}</svg>`
  );
}

const charts = new WeakMap<AnyStateMachine, Promise<StateChart>>();

/** The machine's chart, laid out once per machine. */
export function stateChart(machine: AnyStateMachine): Promise<StateChart> {
  let chart = charts.get(machine);
  if (chart === undefined) {
    const diagram = chartDiagram(chartGraph(machine));
    chart = layoutChart(diagram).then((layout) => ({ ...diagram, layout, svg: render(machine, diagram, layout) }));
    charts.set(machine, chart);
  }
  return chart;
}
