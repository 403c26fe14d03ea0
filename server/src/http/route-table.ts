import { openApiDocument } from '../api/openapi.ts';
import { appRouter } from '../api/router.ts';
import { onTypedDoor } from './request-kind.ts';

/** A procedure a request is addressed to, as the HTTP layer sees it before any body is read. */
export type ProcedureRoute = {
  /** The metric label: the OpenAPI path template (REST) or `/trpc/<procedure>` (typed door). */
  name: string;
  /** Whether credentials are required (every procedure but the public model list). */
  protected: boolean;
};

/** A REST request matched to its procedure, with the path's parameters percent-decoded. */
export type RestMatch = {
  route: ProcedureRoute;
  /** The procedure's path in the router, e.g. `annotationQueues.items.progress`. */
  procedure: string;
  /** Path parameters by name, decoded (`ns%3A1` → `ns:1`); undefined when a segment is not valid percent-encoding. */
  params: Record<string, string> | undefined;
};

const MAX_REMEMBERED_LOOKUPS = 1000;
const MAX_REMEMBERED_PATH = 256;

type RestEntry = { method: string; pattern: RegExp; names: string[]; procedure: string; route: ProcedureRoute };

/** A request to the typed door naming more procedures than this is refused before it is read. */
export const MAX_TRPC_BATCH = 10;

export type TrpcMatch = { procedures: ProcedureRoute[]; unknown: string | undefined; tooMany: boolean };

/**
 * The procedures of the router, read from the OpenAPI document generated from it: REST path
 * templates with their methods, and the typed door's procedure names (an operation's id is its
 * procedure path with `-` for `.`). REST paths match case-insensitively, a trailing slash ignored,
 * one path segment per parameter.
 */
export class RouteTable {
  /**
   * The REST entries by method, number of path segments and first segment (lower case), each list
   * in the document's order: a lookup tests a few patterns, not every one (paths with ids are
   * seldom asked twice, so most lookups are not remembered).
   */
  readonly #rest = new Map<string, RestEntry[]>();
  /**
   * The entries of recent REST lookups by method and path: admission, the REST door and the metric
   * label each ask for the same request, which was three scans of every pattern per request.
   * Bounded: paths carry ids, so it is emptied when full; long paths are not kept.
   */
  readonly #recent = new Map<string, RestEntry | null>();
  readonly #trpc = new Map<string, ProcedureRoute>();

  constructor() {
    for (const [template, item] of Object.entries(openApiDocument().paths ?? {})) {
      for (const [method, operation] of Object.entries(item ?? {})) {
        const op = operation as { operationId?: string; security?: unknown[] };
        const isProtected = op.security !== undefined && op.security.length > 0;
        const procedure = op.operationId!.replaceAll('-', '.');
        const entry: RestEntry = {
          method: method.toUpperCase(),
          pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '([^/]+)')}/?$`, 'i'),
          names: [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!),
          procedure,
          route: { name: template, protected: isProtected },
        };
        const key = groupKey(entry.method, template);
        if (key === undefined) throw new Error(`route ${template} starts with a parameter`);
        const group = this.#rest.get(key);
        if (group) group.push(entry);
        else this.#rest.set(key, [entry]);
        this.#trpc.set(procedure, { name: `/trpc/${procedure}`, protected: isProtected });
      }
    }
    // Procedures of the typed door alone (subscriptions): not in the document, and all protected.
    for (const procedure of Object.keys(appRouter._def.procedures)) {
      if (!this.#trpc.has(procedure)) this.#trpc.set(procedure, { name: `/trpc/${procedure}`, protected: true });
    }
  }

  /** The REST route of a method and path (HEAD reads as GET), or undefined. */
  rest(method: string, path: string): ProcedureRoute | undefined {
    return this.#restEntry(method, path)?.route;
  }

  /** The procedure a REST request calls and its path parameters, or undefined for no route. */
  restMatch(method: string, path: string): RestMatch | undefined {
    const entry = this.#restEntry(method, path);
    if (!entry) return undefined;
    const values = entry.pattern.exec(path)!.slice(1);
    let params: Record<string, string> | undefined = {};
    try {
      for (const [i, name] of entry.names.entries()) params[name] = decodeURIComponent(values[i]!);
    } catch {
      params = undefined; // URIError: a `%` not followed by two hex digits, or bytes that are not UTF-8
    }
    return { route: entry.route, procedure: entry.procedure, params };
  }

  #restEntry(method: string, path: string): RestEntry | undefined {
    const wanted = method === 'HEAD' ? 'GET' : method;
    if (path.length > MAX_REMEMBERED_PATH) return this.#find(wanted, path);
    const key = `${wanted} ${path}`;
    let entry = this.#recent.get(key);
    if (entry === undefined) {
      entry = this.#find(wanted, path) ?? null;
      if (this.#recent.size >= MAX_REMEMBERED_LOOKUPS) this.#recent.clear();
      this.#recent.set(key, entry);
    }
    return entry ?? undefined;
  }

  #find(method: string, path: string): RestEntry | undefined {
    const key = groupKey(method, path);
    return key === undefined ? undefined : this.#rest.get(key)?.find((r) => r.pattern.test(path));
  }

  /** The procedures a `/trpc/<a>,<b>` path names (tRPC batches join names with commas). */
  trpc(path: string): TrpcMatch {
    const names = path.slice('/trpc/'.length).split(','); // '/trpc' alone names '' (unknown)
    if (names.length > MAX_TRPC_BATCH) return { procedures: [], unknown: undefined, tooMany: true };
    const procedures: ProcedureRoute[] = [];
    for (const name of names) {
      const route = this.#trpc.get(name);
      if (!route) return { procedures, unknown: name, tooMany: false };
      procedures.push(route);
    }
    return { procedures, unknown: undefined, tooMany: false };
  }

  /** The metric label of a path: bounded, whatever paths clients send. */
  label(method: string, path: string): string {
    if (onTypedDoor(path)) {
      const { procedures, unknown, tooMany } = this.trpc(path);
      if (tooMany || unknown !== undefined) return '/trpc/unmatched';
      return procedures.length === 1 ? procedures[0]!.name : '/trpc/batch';
    }
    return this.rest(method, path)?.name ?? 'unmatched';
  }
}

/**
 * The group of a method and path: its segments counted without a trailing slash, its first segment
 * in lower case (REST paths match case-insensitively). Undefined for a path that is not `/…`.
 */
function groupKey(method: string, path: string): string | undefined {
  if (path.charCodeAt(0) !== 47 /* / */) return undefined;
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  const secondSlash = trimmed.indexOf('/', 1);
  const first = (secondSlash === -1 ? trimmed.slice(1) : trimmed.slice(1, secondSlash)).toLowerCase();
  let segments = 1;
  for (let i = secondSlash; i !== -1; i = trimmed.indexOf('/', i + 1)) segments++;
  return `${method} ${segments} ${first}`;
}
