/**
 * A chart diagram laid out by ELK's layered algorithm (elkjs), top to bottom: the initial state
 * first, the final states last, in the machine's declaration order. ELK gives every arrow its own
 * end point on a state's side (no two arrowheads on one point), routes arrows orthogonally around
 * the states, and places each label as a box of its own, so no label covers a state or another
 * label. Text is measured by estimate (the server has no fonts): generously, so a label's box
 * holds its text in the page's font.
 */
import type { ElkExtendedEdge, ElkLabel, ElkNode } from 'elkjs/lib/elk-api.js';
import type { ChartArrow, ChartDiagram } from './chart.js';

export const NODE_FONT_PX = 14;
export const LABEL_FONT_PX = 12;
export const LABEL_LINE_PX = 16;
/** Wider than the average glyph of the page's sans-serif font, so boxes err on the roomy side. */
const EM_PER_CHAR = 0.62;

export interface Point {
  readonly x: number;
  readonly y: number;
}

export interface Box extends Point {
  readonly width: number;
  readonly height: number;
}

export interface LaidState extends Box {
  readonly state: string;
}

export interface LaidArrow {
  readonly arrow: ChartArrow;
  /** The route, start to end (the end touches the target). */
  readonly points: readonly Point[];
  readonly label: Box | undefined;
}

export interface ChartLayout {
  readonly width: number;
  readonly height: number;
  readonly states: readonly LaidState[];
  /** The "from any of these states" box, with its caption's box. */
  readonly group: (Box & { readonly caption: Box }) | undefined;
  readonly start: (Point & { readonly points: readonly Point[] }) | undefined;
  readonly arrows: readonly LaidArrow[];
}

export const GROUP_CAPTION = 'from any of these states';

export function textWidth(text: string, fontPx: number): number {
  return Math.ceil(text.length * fontPx * EM_PER_CHAR);
}

const START_ID = '\u0000start';
const GROUP_ID = '\u0000group';
const stateId = (state: string): string => `state:${state}`;

function stateNode(state: string): ElkNode {
  return { id: stateId(state), width: Math.max(110, textWidth(state, NODE_FONT_PX) + 36), height: 40 };
}

function labelOf(arrow: ChartArrow): ElkLabel[] {
  if (arrow.lines.length === 0 || arrow.lines.every((line) => line === '')) return [];
  const width = Math.max(...arrow.lines.map((line) => textWidth(line, LABEL_FONT_PX))) + 10;
  return [{ text: arrow.lines.join('\n'), width, height: arrow.lines.length * LABEL_LINE_PX + 6 }];
}

const ROOT_OPTIONS = {
  'elk.algorithm': 'layered',
  'elk.direction': 'DOWN',
  'elk.edgeRouting': 'ORTHOGONAL',
  'elk.json.edgeCoords': 'ROOT',
  'elk.json.shapeCoords': 'ROOT',
  'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
  'elk.layered.spacing.nodeNodeBetweenLayers': '44',
  'elk.layered.spacing.edgeNodeBetweenLayers': '18',
  'elk.layered.spacing.edgeEdgeBetweenLayers': '12',
  'elk.spacing.nodeNode': '36',
  'elk.spacing.edgeNode': '18',
  'elk.spacing.edgeEdge': '14',
  'elk.spacing.edgeLabel': '4',
  'elk.layered.nodePlacement.strategy': 'NETWORK_SIMPLEX',
  // Of a cycle, the arrow against declaration order goes back up: the machine reads in its own order.
  'elk.layered.cycleBreaking.strategy': 'MODEL_ORDER',
  'elk.padding': '[top=16,left=16,bottom=16,right=16]',
};

type ElkLayout = (graph: ElkNode) => Promise<ElkNode>;
let elk: Promise<ElkLayout> | undefined;

/** ELK is ~1.6 MB of JavaScript: loaded on the first chart, not with Warden. */
function loadElk(): Promise<ElkLayout> {
  elk ??= import('elkjs/lib/elk.bundled.js').then((loaded) => {
    // A CommonJS class whose `default` is itself: the same constructor however it was imported.
    const instance = new loaded.default.default();
    return (graph) => instance.layout(graph);
  });
  return elk;
}

function box(node: { x?: number; y?: number; width?: number; height?: number } | undefined): Box {
  return { x: node?.x ?? 0, y: node?.y ?? 0, width: node?.width ?? 0, height: node?.height ?? 0 };
}

function route(edge: ElkExtendedEdge | undefined): Point[] {
  const section = edge?.sections?.[0];
  return section ? [section.startPoint, ...(section.bendPoints ?? []), section.endPoint] : [];
}

export async function layoutChart(diagram: ChartDiagram): Promise<ChartLayout> {
  const inGroup = new Set(diagram.group);
  const captionWidth = textWidth(GROUP_CAPTION, LABEL_FONT_PX);
  const edgeOf = (arrow: ChartArrow, i: number): ElkExtendedEdge => ({
    id: `arrow:${i}`,
    sources: [arrow.grouped ? GROUP_ID : stateId(arrow.from[0] ?? '')],
    targets: [stateId(arrow.to)],
    labels: labelOf(arrow),
  });
  const numbered = diagram.arrows.map((arrow, i) => [arrow, i] as const);
  const inside = numbered.filter(([arrow]) => !arrow.grouped && inGroup.has(arrow.from[0] ?? '') && inGroup.has(arrow.to));
  const outside = numbered.filter(([arrow]) => !inside.some(([other]) => other === arrow));
  // The initial marker goes where its state is: in the box, or beside it.
  const start: ElkNode[] = diagram.initial ? [{ id: START_ID, width: 14, height: 14, layoutOptions: { 'elk.layered.layering.layerConstraint': 'FIRST' } }] : [];
  const startEdge: ElkExtendedEdge[] = diagram.initial ? [{ id: 'start', sources: [START_ID], targets: [stateId(diagram.initial)] }] : [];
  const startInGroup = diagram.initial !== undefined && inGroup.has(diagram.initial);
  // The box is laid out on its own (and so fits its states) unless an arrow crosses its border.
  const crossing = outside.some(([arrow]) => !arrow.grouped && (inGroup.has(arrow.from[0] ?? '') || inGroup.has(arrow.to)));
  const hierarchy = { 'elk.hierarchyHandling': crossing ? 'INCLUDE_CHILDREN' : 'SEPARATE_CHILDREN' };
  const group: ElkNode | undefined =
    inGroup.size === 0 ? undefined : {
      id: GROUP_ID,
      layoutOptions: { ...ROOT_OPTIONS, ...hierarchy, 'elk.padding': `[top=${LABEL_LINE_PX + 16},left=14,bottom=20,right=14]`, 'elk.nodeLabels.placement': 'INSIDE V_TOP H_LEFT' },
      labels: [{ text: GROUP_CAPTION, width: captionWidth, height: LABEL_LINE_PX }],
      children: [...(startInGroup ? start : []), ...diagram.group.map(stateNode)],
      edges: [...(startInGroup ? startEdge : []), ...inside.map(([arrow, i]) => edgeOf(arrow, i))],
    };
  const graph: ElkNode = {
    id: 'root',
    layoutOptions: { ...ROOT_OPTIONS, ...hierarchy },
    children: [
      ...(startInGroup ? [] : start),
      ...(group ? [group] : []),
      ...diagram.states
        .filter((state) => !inGroup.has(state))
        .map((state) => (diagram.finals.includes(state) ? { ...stateNode(state), layoutOptions: { 'elk.layered.layering.layerConstraint': 'LAST' } } : stateNode(state))),
    ],
    edges: [...(startInGroup ? [] : startEdge), ...outside.map(([arrow, i]) => edgeOf(arrow, i))],
  };
  const laid = await (await loadElk())(graph);
  const nodes = new Map<string, ElkNode>();
  const edges = new Map<string, ElkExtendedEdge>();
  const collect = (node: ElkNode): void => {
    nodes.set(node.id, node);
    for (const edge of node.edges ?? []) edges.set(edge.id, edge);
    for (const child of node.children ?? []) collect(child);
  };
  collect(laid);
  const startNode = nodes.get(START_ID);
  const groupNode = nodes.get(GROUP_ID);
  return {
    width: laid.width ?? 0,
    height: laid.height ?? 0,
    states: diagram.states.map((state) => ({ state, ...box(nodes.get(stateId(state))) })),
    group: groupNode ? { ...box(groupNode), caption: box(groupNode.labels?.[0]) } : undefined,
    start: startNode ? { x: (startNode.x ?? 0) + 7, y: (startNode.y ?? 0) + 7, points: route(edges.get('start')) } : undefined,
    arrows: diagram.arrows.map((arrow, i) => {
      const edge = edges.get(`arrow:${i}`);
      const label = edge?.labels?.[0];
      return { arrow, points: route(edge), label: label ? box(label) : undefined };
    }),
  };
}
