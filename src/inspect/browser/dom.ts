/**
 * Building the page: elements made with their text as text nodes, never parsed. Every value from
 * the cluster (job, task and check names, messages) reaches the page through here.
 */
export type Child = Node | string | number | null | undefined | false;

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Readonly<Record<string, string>> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === 'class') node.className = value;
    else node.setAttribute(name, value);
  }
  append(node, ...children);
  return node;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
}

/** The element of that ID, which the page's HTML guarantees. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (node === null) throw new Error(`inspector page: no #${id}`);
  return node as T;
}

/** A term/description list from rows. */
export function definitionList(rows: readonly (readonly [string, string])[]): HTMLDListElement {
  const list = el('dl');
  for (const [term, value] of rows) append(list, el('dt', {}, term), el('dd', {}, value));
  return list;
}
