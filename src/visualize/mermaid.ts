/**
 * A Mermaid stateDiagram-v2 drawn from an XState v5 machine definition (machine.root), so the
 * committed charts can never drift from the machines: initial and final markers, nested and
 * parallel states, every transition labelled `event [guard] / actions` (eventless ones `always`).
 */
import type { AnyStateMachine, AnyStateNode } from 'xstate';

type GuardLike = string | { type?: unknown } | ((...args: never[]) => unknown) | undefined;
type ActionLike = string | { type?: unknown } | ((...args: never[]) => unknown);

function guardName(guard: GuardLike): string {
  if (guard === undefined) return '';
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') {
    // xstate's and()/or()/not() are functions named after themselves that carry their operands.
    const operands = (guard as { guards?: GuardLike[] }).guards;
    return operands === undefined ? guard.name || 'guard' : `${guard.name}(${operands.map(guardName).join(', ')})`;
  }
  return typeof guard.type === 'string' ? guard.type : 'guard';
}

function actionName(action: ActionLike): string {
  if (typeof action === 'string') return action;
  if (typeof action === 'function') return action.name || 'action';
  return typeof action.type === 'string' ? action.type : 'action';
}

/** The state's path below the root; Mermaid ids allow letters, digits and underscores. */
function mermaidId(node: AnyStateNode): string {
  return node.path.join('__').replace(/[^A-Za-z0-9_]/g, '_');
}

interface Transition {
  readonly eventType: string;
  readonly guard?: GuardLike;
  readonly actions: readonly ActionLike[];
  readonly target?: readonly AnyStateNode[];
}

function label(transition: Transition): string {
  const event = transition.eventType === '' ? 'always' : transition.eventType;
  const guard = guardName(transition.guard);
  const actions = transition.actions.map(actionName);
  // Mermaid reads ':' and ';' as syntax inside labels.
  const text = `${event}${guard === '' ? '' : ` [${guard}]`}${actions.length === 0 ? '' : ` / ${actions.join(', ')}`}`;
  return text.replace(/[:;]/g, ' ');
}

function transitionsOf(node: AnyStateNode): Transition[] {
  const onEvents = [...node.transitions.values()].flat() as Transition[];
  return [...onEvents, ...((node.always ?? []) as Transition[])];
}

function drawNode(node: AnyStateNode, indent: string, lines: string[]): void {
  const id = mermaidId(node);
  const children = Object.values(node.states) as AnyStateNode[];
  if (id !== node.key) lines.push(`${indent}state "${node.key}" as ${id}`);
  if (children.length > 0) {
    lines.push(`${indent}state ${id} {`);
    drawChildren(node, `${indent}  `, lines);
    lines.push(`${indent}}`);
  }
  for (const transition of transitionsOf(node)) {
    const targets = transition.target === undefined || transition.target.length === 0 ? [node] : transition.target;
    for (const target of targets) lines.push(`${indent}${id} --> ${mermaidId(target)} : ${label(transition)}`);
  }
  if (node.type === 'final') lines.push(`${indent}${id} --> [*]`);
}

function drawChildren(parent: AnyStateNode, indent: string, lines: string[]): void {
  const children = Object.values(parent.states) as AnyStateNode[];
  children.forEach((child, i) => {
    if (parent.type === 'parallel' && i > 0) lines.push(`${indent}--`);
    const initial = parent.type !== 'parallel' && parent.initial?.target?.[0] === child;
    if (initial || parent.type === 'parallel') lines.push(`${indent}[*] --> ${mermaidId(child)}`);
    drawNode(child, indent, lines);
  });
}

export function toMermaid(machine: AnyStateMachine): string {
  const lines = ['stateDiagram-v2', `  %% ${machine.id}: generated from the machine definition by npm run visualize; do not edit`];
  drawChildren(machine.root, '  ', lines);
  return `${lines.join('\n')}\n`;
}
