/**
 * The committed charts are generated from the machines: this fails when a machine changed and
 * `npm run visualize` was not run. The generator itself is checked on a small machine with every
 * construct it draws.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { and, createMachine, not } from 'xstate';
import { chartsOf, staleCharts } from '../../src/visualize/charts.js';
import { visualizedMachines } from '../../src/visualize/machines.js';
import { toMermaid } from '../../src/visualize/mermaid.js';

describe('visualizations/', () => {
  it('every committed chart is what `npm run visualize` writes today', () => {
    expect(staleCharts(join(process.cwd(), 'visualizations'), chartsOf(visualizedMachines))).toEqual([]);
  });

  it('includes the allocation health machine', () => {
    expect(Object.keys(visualizedMachines)).toContain('allocationHealth');
  });

  it('notices a stale or missing chart', () => {
    const dir = mkdtempSync(join(tmpdir(), 'warden-charts-'));
    const charts = [
      { file: 'a.mmd', text: 'stateDiagram-v2\n' },
      { file: 'b.mmd', text: 'stateDiagram-v2\n' },
    ];
    writeFileSync(join(dir, 'a.mmd'), 'stateDiagram-v2\n');
    writeFileSync(join(dir, 'b.mmd'), 'old\n');
    expect(staleCharts(dir, [...charts, { file: 'c.mmd', text: '' }])).toEqual(['b.mmd', 'c.mmd']);
  });
});

describe('toMermaid', () => {
  const machine = createMachine({
    id: 'demo',
    initial: 'idle',
    states: {
      idle: { on: { GO: { target: 'busy', guard: and(['ready', not('paused')]), actions: 'log' } } },
      busy: {
        type: 'parallel',
        states: {
          left: { initial: 'a', states: { a: { on: { NEXT: 'b' } }, b: {} } },
          right: { initial: 'c', states: { c: { always: { target: '#demo.done', guard: 'finished' } } } },
        },
      },
      done: { type: 'final' },
    },
  });

  it('draws initial and final markers, nesting, parallel regions and labelled transitions', () => {
    expect(toMermaid(machine).split('\n')).toEqual([
      'stateDiagram-v2',
      '  %% demo: generated from the machine definition by npm run visualize; do not edit',
      '  [*] --> idle',
      '  idle --> busy : GO [and(ready, not(paused))] / log',
      '  state busy {',
      '    [*] --> busy__left',
      '    state "left" as busy__left',
      '    state busy__left {',
      '      [*] --> busy__left__a',
      '      state "a" as busy__left__a',
      '      busy__left__a --> busy__left__b : NEXT',
      '      state "b" as busy__left__b',
      '    }',
      '    --',
      '    [*] --> busy__right',
      '    state "right" as busy__right',
      '    state busy__right {',
      '      [*] --> busy__right__c',
      '      state "c" as busy__right__c',
      '      busy__right__c --> done : always [finished]',
      '    }',
      '  }',
      '  done --> [*]',
      '',
    ]);
  });
});
