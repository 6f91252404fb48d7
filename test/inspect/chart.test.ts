/**
 * The inspector's chart comes from the machine definition: every state and every transition of a
 * (flat) machine is drawn, final states last, no two states overlapping, and names escaped.
 */
import { createMachine, type AnyStateMachine, type AnyStateNode } from 'xstate';
import { allocationHealthMachine } from '../../machines/allocationHealth.js';
import { evaluationMachine } from '../../machines/evaluation.js';
import { stateChart } from '../../src/inspect/index.js';

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

function drawn(svg: string): { edges: string[]; boxes: Map<string, { x: number; y: number; w: number; h: number }> } {
  const edges = [...svg.matchAll(/class="edge" data-from="([^"]+)" data-to="([^"]+)"/g)].map(([, from, to]) => `${from}->${to}`).sort();
  const boxes = new Map(
    [...svg.matchAll(/data-state="([^"]+)"><rect x="([\d.-]+)" y="([\d.-]+)" width="([\d.]+)" height="([\d.]+)"/g)].map(([, state, x, y, w, h]) => [
      state!,
      { x: Number(x), y: Number(y), w: Number(w), h: Number(h) },
    ]),
  );
  return { edges, boxes };
}

describe.each([
  ['allocationHealth', allocationHealthMachine],
  ['evaluation', evaluationMachine],
])('the chart of the %s machine', (_name, machine: AnyStateMachine) => {
  const chart = stateChart(machine);
  const { edges, boxes } = drawn(chart.svg);

  test('has every state and every transition of the definition', () => {
    expect([...boxes.keys()].sort()).toEqual(Object.keys(machine.root.states).sort());
    expect(edges).toEqual(definedEdges(machine));
    expect(chart.initial).toBe(machine.root.initial.target[0]?.key);
    const finals = (Object.values(machine.root.states) as AnyStateNode[]).filter((node) => node.type === 'final').map((node) => node.key);
    expect([...chart.finals].sort()).toEqual(finals.sort());
  });

  test('starts at the initial state on the left, ends with the final states on the right, and no two states overlap', () => {
    const box = (state: string) => boxes.get(state)!;
    const xs = [...boxes.values()].map((b) => b.x);
    expect(box(chart.initial!).x).toBe(Math.min(...xs));
    for (const final of chart.finals) expect(box(final).x).toBe(Math.max(...xs));
    const all = [...boxes.values()];
    for (const [i, a] of all.entries()) {
      for (const b of all.slice(i + 1)) {
        const apart = a.x + a.w <= b.x || b.x + b.w <= a.x || a.y + a.h <= b.y || b.y + b.h <= a.y;
        expect(apart).toBe(true);
      }
    }
  });
});

test('the health chart reads in the machine\'s order: pending, running, minHealthyWait, then the verdicts', () => {
  const { boxes } = drawn(stateChart(allocationHealthMachine).svg);
  const x = (state: string): number => boxes.get(state)!.x;
  expect(x('pending')).toBeLessThan(x('running'));
  expect(x('running')).toBeLessThan(x('minHealthyWait'));
  expect(x('minHealthyWait')).toBeLessThan(x('healthy'));
});

test('guard and event names are escaped in the SVG', () => {
  const machine = createMachine({
    id: 'hostile',
    initial: 'a',
    states: { a: { on: { 'GO<script>': { target: 'b', guard: '<img src=x onerror=alert(1)>&"' } } }, b: { type: 'final' } },
  });
  const { svg } = stateChart(machine);
  expect(svg).not.toContain('<script>');
  expect(svg).not.toContain('<img');
  expect(svg).toContain('GO&lt;script&gt;');
  expect(svg).toContain('&lt;img src=x onerror=alert(1)&gt;&amp;&quot;');
});
