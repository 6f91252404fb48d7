/** The side column's panels, in order. Add a panel here (see panel.ts). */
import { evaluationsPanel, execSessionsPanel, problemsPanel } from './children.js';
import { deploymentsPanel } from './deployments.js';
import type { SidePanel } from './panel.js';
import { poolsPanel } from './pools.js';

export const SIDE_PANELS: readonly SidePanel[] = [deploymentsPanel, poolsPanel, evaluationsPanel, execSessionsPanel, problemsPanel];
