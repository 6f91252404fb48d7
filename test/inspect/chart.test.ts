/**
 * The inspector's chart comes from the machine definition: every state and every transition of a
 * (flat) machine is drawn, top to bottom from the initial state to the final ones; the transitions
 * every waiting state has alike are one arrow from a box around them; and it is legible — no two
 * states overlap, no two arrowheads share a point, every arrow runs from its source's border to its
 * target's, no label covers a state or another label — with every name escaped.
 */
import { createMachine, type AnyStateMachine, type AnyStateNode } from 'xstate';
import { allocationHealthMachine } from '../../machines/allocationHealth.js';
import { evaluationMachine } from '../../machines/evaluation.js';
import { guardWords, shortLabel, wrap } from '../../src/inspect/chart.js';
import type { Box, Point } from '../../src/inspect/chartLayout.js';
import { stateChart, type StateChart } from '../../src/inspect/index.js';

/** The transitions read straight from machine.root, without the Mermaid text the chart goes through. */
function definedEdges(machine: AnyStateMachine): string[] {
  const edges = new Set<string>();
  for (const node of Object.values(machine.root.states) as AnyStateNode[]) {
    const transitions = [...node.transitions.values()].flat() as { target?: AnyStateNode[] }[];
    for (const transition of [...transitions, ...((node.always ?? []) as { target?: AnyStateNode[] }[])]) {
      for (const target of transition.target ?? []) if (target.key !== node.key) edges.add(`${node.key}->${target.key}`);
    }
  }
  return [...edges].sort();
}

/** What the SVG draws: each arrow's pairs of states (a grouped arrow: one per state it leaves from), and each state's box. */
function drawn(svg: string): { edges: string[]; boxes: Map<string, Box> } {
  const edges = [...svg.matchAll(/class="edge(?: grouped)?" data-from="([^"]+)" data-to="([^"]+)"/g)].flatMap(([, from, to]) =>
    from!.split(' ').map((state) => `${state}->${to}`),
  );
  const boxes = new Map(
    [...svg.matchAll(/data-state="([^"]+)"><rect x="([\d.-]+)" y="([\d.-]+)" width="([\d.]+)" height="([\d.]+)"/g)].map(([, state, x, y, width, height]) => [
      state!,
      { x: Number(x), y: Number(y), width: Number(width), height: Number(height) },
    ]),
  );
  return { edges: [...new Set(edges)].sort(), boxes };
}

const apart = (a: Box, b: Box): boolean => a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y || b.y + b.height <= a.y;
const onBorder = (point: Point, box: Box): boolean => {
  const within = (value: number, from: number, to: number): boolean => value >= from - 0.6 && value <= to + 0.6;
  const near = (value: number, edge: number): boolean => Math.abs(value - edge) <= 0.6;
  return (
    (within(point.x, box.x, box.x + box.width) && (near(point.y, box.y) || near(point.y, box.y + box.height))) ||
    (within(point.y, box.y, box.y + box.height) && (near(point.x, box.x) || near(point.x, box.x + box.width)))
  );
};

describe.each([
  ['allocationHealth', allocationHealthMachine],
  ['evaluation', evaluationMachine],
])('the chart of the %s machine', (_name, machine: AnyStateMachine) => {
  let chart: StateChart;
  beforeAll(async () => {
    chart = await stateChart(machine);
  });

  test('has every state and every transition of the definition', () => {
    const { edges, boxes } = drawn(chart.svg);
    expect([...boxes.keys()].sort()).toEqual(Object.keys(machine.root.states).sort());
    expect(edges).toEqual(definedEdges(machine));
    expect(chart.initial).toBe(machine.root.initial.target[0]?.key);
    const finals = (Object.values(machine.root.states) as AnyStateNode[]).filter((node) => node.type === 'final').map((node) => node.key);
    expect([...chart.finals].sort()).toEqual(finals.sort());
  });

  test('reads top to bottom: the initial state first, the final states last; no two states overlap', () => {
    const { boxes } = drawn(chart.svg);
    const box = (state: string): Box => boxes.get(state)!;
    const all = [...boxes.values()];
    const ys = all.map((b) => b.y);
    const waiting = [...boxes.keys()].filter((state) => !chart.finals.includes(state));
    for (const state of waiting) expect(box(chart.initial!).y).toBeLessThanOrEqual(box(state).y);
    for (const final of chart.finals) expect(box(final).y).toBe(Math.max(...ys));
    for (const [i, a] of all.entries()) for (const b of all.slice(i + 1)) expect(apart(a, b)).toBe(true);
  });

  test('legible: arrows run border to border, no two arrowheads share a point, no label covers a state or another label', () => {
    const { layout } = chart;
    const boxOf = new Map(layout.states.map((laid) => [laid.state, laid as Box]));
    const heads = new Set<string>();
    for (const { arrow, points } of layout.arrows) {
      expect(points.length).toBeGreaterThanOrEqual(2);
      const source = arrow.grouped ? layout.group! : boxOf.get(arrow.from[0]!)!;
      expect(onBorder(points[0]!, source)).toBe(true);
      expect(onBorder(points.at(-1)!, boxOf.get(arrow.to)!)).toBe(true);
      const head = `${Math.round(points.at(-1)!.x)},${Math.round(points.at(-1)!.y)}`;
      expect(heads.has(head)).toBe(false);
      heads.add(head);
    }
    const labels = layout.arrows.flatMap(({ label }) => (label ? [label] : []));
    expect(labels).toHaveLength(layout.arrows.filter(({ arrow }) => arrow.lines.length > 0).length);
    for (const [i, label] of labels.entries()) {
      for (const state of layout.states) expect(apart(label, state)).toBe(true);
      for (const other of labels.slice(i + 1)) expect(apart(label, other)).toBe(true);
      if (layout.group) expect(apart(label, layout.group.caption)).toBe(true);
    }
  });
});

test('the health chart: pending, running, minHealthyWait, disconnected in a box, one arrow from the box to each verdict state, with every guard on it', async () => {
  const chart = await stateChart(allocationHealthMachine);
  const { boxes } = drawn(chart.svg);
  const y = (state: string): number => boxes.get(state)!.y;
  expect(y('pending')).toBeLessThan(y('running'));
  expect(y('running')).toBeLessThan(y('minHealthyWait'));
  expect(y('minHealthyWait')).toBeLessThan(y('healthy'));
  expect(chart.group).toEqual(['pending', 'running', 'minHealthyWait', 'disconnected']);
  const grouped = chart.arrows.filter((arrow) => arrow.grouped);
  expect(grouped.map((arrow) => [arrow.to, arrow.lines])).toEqual([
    ['healthy', ['healthyDue']],
    ['unhealthy', ['taskFailed', 'allocFailed', 'deadlinePassed']],
    ['stopped', ['desiredStop']],
  ]);
  // Nothing else goes into a verdict state: each was drawn once, not once per waiting state.
  expect(chart.arrows.filter((arrow) => !arrow.grouped && chart.finals.includes(arrow.to))).toEqual([]);
  expect(chart.svg.match(/class="edge grouped"/g)).toHaveLength(3);
  expect(chart.svg).toContain('from any of these states');
  // The box holds its states.
  const group = chart.layout.group!;
  for (const state of chart.group) {
    const box = boxes.get(state)!;
    expect(box.x >= group.x && box.y >= group.y && box.x + box.width <= group.x + group.width && box.y + box.height <= group.y + group.height).toBe(true);
  }
});

test('the evaluation chart has no box: no transition is common to all its waiting states', async () => {
  const chart = await stateChart(evaluationMachine);
  expect(chart.group).toEqual([]);
  expect(chart.arrows.every((arrow) => !arrow.grouped && arrow.from.length === 1)).toBe(true);
});

test('arrow labels: the guard alone when the machine has one event, else the event and its guard; XState\'s internal events in words', () => {
  expect(shortLabel('observe [taskFailed] / judgeTaskFailed', false)).toBe('taskFailed');
  expect(shortLabel('observe [and(not(allReady), someTaskRunning)] / record', false)).toBe('not allReady and someTaskRunning');
  expect(shortLabel('observe [not(someTaskRunning)] / record', false)).toBe('not someTaskRunning');
  expect(guardWords('or(a, and(b, not(c)), d)')).toBe('a or b and not c or d');
  expect(guardWords('custom(x)')).toBe('custom(x)');
  expect(guardWords('unbalanced(')).toBe('unbalanced(');
  expect(wrap('not allReady and someTaskRunning')).toEqual(['not allReady and', 'someTaskRunning']);
  expect(wrap('EVALUATION.UPDATED [concernsThisEvaluation]')).toEqual(['EVALUATION.UPDATED', '[concernsThisEvaluation]']);
  expect(shortLabel('EVALUATION.UPDATED [concernsThisEvaluation] / recordUpdate', true)).toBe('EVALUATION.UPDATED [concernsThisEvaluation]');
  expect(shortLabel('STREAM.DOWN / markStreamDown', true)).toBe('STREAM.DOWN');
  expect(shortLabel('xstate.after.readRetry.evaluation.retrying', true)).toBe('after readRetry');
  expect(shortLabel('xstate.done.actor.0.evaluation.reading / keepNewerRead', true)).toBe('done');
  expect(shortLabel('xstate.error.actor.0.evaluation.reading [notFound] / recordNotFound', true)).toBe('error [notFound]');
  expect(shortLabel('always [followsNext]', true)).toBe('always [followsNext]');
});

test('guard and event names are escaped in the SVG', async () => {
  const machine = createMachine({
    id: 'hostile',
    initial: 'a',
    states: { a: { on: { 'GO<script>': { target: 'b', guard: '<img src=x onerror=alert(1)>&"' } } }, b: { type: 'final' } },
  });
  const { svg } = await stateChart(machine);
  expect(svg).not.toContain('<script>');
  expect(svg).not.toContain('<img');
  expect(svg).toContain('GO&lt;script&gt;');
  expect(svg).toContain('&lt;img src=x onerror=alert(1)&gt;&amp;&quot;');
});
