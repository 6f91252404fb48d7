import type * as NodePty from 'node-pty';

/**
 * node-pty, loaded the first time a fake exec session asks for a terminal. It is a native addon
 * (compiled with node-gyp, tens of MB), needed by nothing else in Warden: an optional peer dependency
 * that a project installs when its tests run tty sessions against FakeNomad.
 */
export type NodePtyModule = typeof NodePty;

/** node-pty could not be loaded: not installed, or installed without its native build. */
export class NodePtyMissingError extends Error {
  readonly code = 'WARDEN_NODE_PTY_MISSING';
  constructor(cause: unknown) {
    super('tty sessions need node-pty, an optional peer dependency: npm install --save-dev node-pty', { cause });
    this.name = 'NodePtyMissingError';
  }
}

let loading: Promise<NodePtyModule> | undefined;

export function loadNodePty(): Promise<NodePtyModule> {
  loading ??= import('node-pty').then(
    // A CommonJS module: its exports are the namespace, or its default under some loaders.
    (module: NodePtyModule & { default?: NodePtyModule }) => (typeof module.spawn === 'function' ? module : (module.default ?? module)),
    (cause: unknown) => {
      // Not cached: a later session may find it installed.
      loading = undefined;
      throw new NodePtyMissingError(cause);
    },
  );
  return loading;
}
