import { openApiDocument } from '../api/openapi.ts';
import { onTypedDoor } from './request-kind.ts';

/** A procedure a request is addressed to, as the HTTP layer sees it before any body is read. */
export type ProcedureRoute = {
  /** The metric label: the OpenAPI path template (REST) or `/trpc/<procedure>` (typed door). */
  name: string;
  /** Whether credentials are required (every procedure but the public model list). */
  protected: boolean;
};

/** A request to the typed door naming more procedures than this is refused before it is read. */
export const MAX_TRPC_BATCH = 10;

export type TrpcMatch = { procedures: ProcedureRoute[]; unknown: string | undefined; tooMany: boolean };

/**
 * The procedures of the router, read from the OpenAPI document generated from it: REST path
 * templates with their methods, and the typed door's procedure names (an operation's id is its
 * procedure path with `-` for `.`). Routing here mirrors the REST adapter's: case-insensitive, a
 * trailing slash ignored, one path segment per parameter.
 */
export class RouteTable {
  readonly #rest: { method: string; pattern: RegExp; route: ProcedureRoute }[] = [];
  readonly #trpc = new Map<string, ProcedureRoute>();

  constructor() {
    for (const [template, item] of Object.entries(openApiDocument().paths ?? {})) {
      for (const [method, operation] of Object.entries(item ?? {})) {
        const op = operation as { operationId?: string; security?: unknown[] };
        const isProtected = op.security !== undefined && op.security.length > 0;
        this.#rest.push({
          method: method.toUpperCase(),
          pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}/?$`, 'i'),
          route: { name: template, protected: isProtected },
        });
        if (op.operationId) {
          const procedure = op.operationId.replaceAll('-', '.');
          this.#trpc.set(procedure, { name: `/trpc/${procedure}`, protected: isProtected });
        }
      }
    }
  }

  /** The REST route of a method and path (HEAD reads as GET), or undefined. */
  rest(method: string, path: string): ProcedureRoute | undefined {
    const wanted = method === 'HEAD' ? 'GET' : method;
    return this.#rest.find((r) => r.method === wanted && r.pattern.test(path))?.route;
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
