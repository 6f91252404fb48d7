/** Runner pools: each environment's idle / used / starting runners, its back-off, and each runner's state and work. */
import { el } from '../dom.js';
import { clockText, instant } from '../format.js';
import type { PoolInfo } from '../../schema.js';
import type { SidePanel } from './panel.js';

function runnerLine(runner: PoolInfo['runners'][number]): HTMLLIElement {
  const work = runner.executions.map((execution) => {
    const since = instant(execution.startedAt);
    return `${execution.kind}${since === null ? '' : ` since ${clockText(since)}`}`;
  });
  const timeout = runner.state === 'used' && runner.inactivityTimeoutS > 0 ? ` · timeout ${runner.inactivityTimeoutS} s` : '';
  // The uuid's first block names the runner well enough beside its environment.
  return el('li', {}, `${runner.id.split('-').slice(0, 2).join('-')} · ${runner.state}${timeout}${work.length > 0 ? ` · ${work.join(', ')}` : ''}`);
}

export const poolsPanel: SidePanel = {
  id: 'pools',
  title: 'Runner pools',
  // Only where there are pools: a supervisor without them shows no empty section.
  shown: (state) => state.pools.size > 0,
  render: (state) =>
    [...state.pools.values()].map((pool) =>
      el(
        'div',
        {},
        el(
          'div',
          { class: pool.backingOff ? 'bad' : 'ok' },
          `environment ${pool.id} (${pool.driver}) · ${pool.state} · idle ${pool.idle}/${pool.poolSize} · used ${pool.used}${pool.provisioning > 0 ? ` · starting ${pool.provisioning}` : ''}`,
        ),
        pool.backingOff && pool.lastError !== null && el('pre', {}, `backing off: ${pool.lastError}`),
        el('ul', { class: 'list' }, ...pool.runners.map(runnerLine)),
      ),
    ),
};
