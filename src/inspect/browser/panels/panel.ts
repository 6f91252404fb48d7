/**
 * A panel of the side column. To add one (runner pools, say): a module exporting a SidePanel, and
 * its place in panels/index.ts; the page gives it a section of its own, with its title, and calls
 * render on every change. What it shows comes from the page state (store.ts), which follows the
 * server's messages (schema.ts).
 */
import type { PageState } from '../store.js';

export interface PanelContext {
  /** The allocation shown in the detail. */
  readonly selected: string | null;
  /** Shows another allocation. */
  select(allocationId: string): void;
}

export interface SidePanel {
  /** Also the section's element ID: `panel-<id>`. */
  readonly id: string;
  readonly title: string;
  /** The section's content, anew. */
  render(state: PageState, context: PanelContext): Node[];
  /** Whether the section shows at all (default: always). */
  shown?(state: PageState): boolean;
}
