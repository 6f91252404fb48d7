/**
 * The inspector page: follows the server over /api/live, keeps what it says (store.ts), and draws
 * it once per frame at most: the allocation list, the shown allocation (the one clicked, else the
 * one named in the address as #<id>, else the first still judged), the side panels.
 */
import type { ConnectionInfo } from '../schema.js';
import { append, byId, el } from './dom.js';
import { clockText, dayText } from './format.js';
import { connectLive } from './live.js';
import { renderAllocationList } from './panels/allocationList.js';
import { renderDetail } from './panels/detail.js';
import { SIDE_PANELS } from './panels/index.js';
import type { PanelContext } from './panels/panel.js';
import { apply, emptyState } from './store.js';
import { pickSelected } from './views.js';

const CONNECTION: Readonly<Record<ConnectionInfo['state'], string>> = {
  connecting: 'connecting',
  streaming: 'streaming events',
  resyncing: 'listing allocations (resync)',
  backingOff: 'connection lost, retrying',
  stopped: 'stopped',
};

const state = emptyState();
let asked: string | null = null;
let shown: string | null = null;
let queued = false;

function fromAddress(): string | null {
  const raw = location.hash.slice(1);
  if (raw === '') return null;
  try {
    return decodeURIComponent(raw);
  } catch {
    return null;
  }
}

const context: PanelContext = {
  get selected() {
    return shown;
  },
  select(allocationId) {
    asked = allocationId;
    history.replaceState(null, '', `#${encodeURIComponent(allocationId)}`);
    render();
  },
};

function renderHeader(): void {
  const connection = state.connection;
  const pill = byId('connection');
  if (connection !== null) {
    pill.dataset.state = connection.state;
    let text = CONNECTION[connection.state] ?? connection.state;
    if (connection.state === 'streaming' && connection.index > 0) text += ` · index ${connection.index}`;
    if (connection.state === 'backingOff') text += ` · attempt ${connection.attempt}${connection.lastError === null ? '' : ` · ${connection.lastError}`}`;
    pill.textContent = text;
  }
  byId('clock').textContent = state.now > 0 ? `${dayText(state.now)} ${clockText(state.now)} UTC` : '';
  const mismatch = byId('schema');
  mismatch.hidden = state.schemaMismatch === null;
  mismatch.textContent = `This page reads the inspector's schema version 1; the server sends version ${state.schemaMismatch ?? '?'}. Reload the page.`;
}

const sections = new Map<string, HTMLElement>();

function renderSidePanels(): void {
  for (const panel of SIDE_PANELS) {
    const content = sections.get(panel.id);
    content?.replaceChildren(...panel.render(state, context));
    if (content?.parentElement) content.parentElement.hidden = panel.shown?.(state) === false;
  }
}

function render(): void {
  queued = false;
  shown = pickSelected(state, asked, fromAddress());
  live.follow(shown);
  renderHeader();
  renderAllocationList(byId('allocations'), byId('empty'), state, byId<HTMLInputElement>('filter').value, context);
  renderDetail(state, shown);
  renderSidePanels();
}

function schedule(): void {
  if (queued) return;
  queued = true;
  requestAnimationFrame(render);
}

for (const panel of SIDE_PANELS) {
  const content = el('div', { class: 'content' });
  append(byId('panels'), el('section', { id: `panel-${panel.id}`, class: 'panel' }, el('h3', {}, panel.title), content));
  sections.set(panel.id, content);
}

const live = connectLive({
  message: (message) => {
    apply(state, message);
    schedule();
  },
  connected: (open) => {
    byId('offline').hidden = open;
  },
});

byId('reconnect').addEventListener('click', () => live.reconnect());
byId('filter').addEventListener('input', schedule);
window.addEventListener('hashchange', () => {
  asked = fromAddress();
  schedule();
});
