/**
 * Routes by method and path pattern, as gorilla/mux routes Poseidon's API: `{name}` matches one path
 * segment, `{name:regex}` one that matches the expression; a path no route matches is 404, a path
 * whose routes take other methods is 405. A dozen routes do not need a router library.
 */

export interface Route<H> {
  method: string;
  /** The pattern without expressions, e.g. `/runners/{runnerId}/files`: the route's name in logs and metrics. */
  pattern: string;
  handler: H;
}

export type RouteMatch<H> =
  | { route: Route<H>; params: Readonly<Record<string, string>> }
  | { status: 404 | 405; allow?: readonly string[] };

interface Compiled<H> {
  route: Route<H>;
  regex: RegExp;
  names: string[];
}

function compile(pattern: string): { regex: RegExp; names: string[] } {
  const names: string[] = [];
  const source = pattern
    .split('/')
    .map((segment) => {
      const param = /^\{([A-Za-z_][A-Za-z0-9_]*)(?::(.+))?\}$/.exec(segment);
      if (param === null) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      names.push(param[1] ?? '');
      return `(${param[2] ?? '[^/]+'})`;
    })
    .join('/');
  return { regex: new RegExp(`^${source}$`), names };
}

export class Router<H> {
  private readonly routes: Compiled<H>[] = [];

  add(method: string, pattern: string, handler: H): this {
    // Named without its expressions: `/x/{id:[0-9]+}` is `/x/{id}` in logs and metrics.
    const name = pattern.replace(/\{([A-Za-z_][A-Za-z0-9_]*):[^}]+\}/g, '{$1}');
    this.routes.push({ route: { method, pattern: name, handler }, ...compile(pattern) });
    return this;
  }

  match(method: string, path: string): RouteMatch<H> {
    const allow: string[] = [];
    for (const { route, regex, names } of this.routes) {
      const found = regex.exec(path);
      if (found === null) continue;
      if (route.method !== method) {
        allow.push(route.method);
        continue;
      }
      const params: Record<string, string> = {};
      try {
        names.forEach((name, i) => (params[name] = decodeURIComponent(found[i + 1] ?? '')));
      } catch {
        // A malformed escape names nothing that exists.
        return { status: 404 };
      }
      return { route, params };
    }
    return allow.length > 0 ? { status: 405, allow } : { status: 404 };
  }
}
