import { OIDC_CALLBACK_PATH, OIDC_START_PATH } from './oidc-routes.ts';
import { OTLP_EXPLAIN_PATH, OTLP_TRACES_PATH } from './otlp-traces.ts';
import type { RouteTable } from './route-table.ts';

const OPERATIONS = new Set(['/health', '/ready', '/metrics', '/openapi.json', OTLP_TRACES_PATH, OTLP_EXPLAIN_PATH, OIDC_START_PATH, OIDC_CALLBACK_PATH]);

/**
 * Names the route a request took, for metric labels: the OpenAPI path template for REST routes,
 * `/trpc/<procedure>` for the typed door, `unmatched` for anything else, so label cardinality
 * stays bounded whatever paths clients send.
 */
export function routeNamer(routes: RouteTable): (method: string, path: string) => string {
  // Paths repeat (polls, health checks); ids make them unbounded, so the memory is capped. Keyed
  // by method, then path: no key string is built per request.
  const seen = new Map<string, Map<string, string>>();
  let remembered = 0;
  return (method, path) => {
    let paths = seen.get(method);
    if (paths === undefined) seen.set(method, (paths = new Map()));
    let route = paths.get(path);
    if (route === undefined) {
      route = name(method, path);
      if (remembered >= 5000) {
        seen.clear();
        seen.set(method, (paths = new Map()));
        remembered = 0;
      }
      // Long paths are not kept: a cache entry must not hold kilobytes a client chose.
      if (path.length <= 256) {
        paths.set(path, route);
        remembered++;
      }
    }
    return route;
  };

  function name(method: string, path: string): string {
    if (OPERATIONS.has(path)) return path;
    if (path.startsWith('/docs')) return '/docs';
    return routes.label(method, path);
  }
}
