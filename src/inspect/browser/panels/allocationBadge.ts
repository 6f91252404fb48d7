import type { AllocationInfo } from '../../schema.js';
import { el } from '../dom.js';
import { verdictWord } from '../views.js';

/** The coloured word for an allocation's state or verdict. */
export function allocationBadge(a: AllocationInfo): HTMLSpanElement {
  const word = verdictWord(a);
  return el('span', { class: 'badge', 'data-state': word }, word);
}
