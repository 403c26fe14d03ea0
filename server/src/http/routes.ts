import { openApiDocument } from '../api/openapi.ts';

const OPERATIONS = new Set(['/health', '/ready', '/metrics', '/openapi.json']);

/**
 * Names the route a request took, for metric labels: the OpenAPI path template for REST routes,
 * `/trpc/<procedure>` for the typed door, so label cardinality stays bounded.
 */
export function routeNamer(): (method: string, path: string) => string {
  const templates = Object.entries(openApiDocument().paths ?? {}).flatMap(([template, item]) =>
    Object.keys(item ?? {}).map((method) => ({
      method: method.toUpperCase(),
      template,
      pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}/?$`, 'i'),
    })),
  );
  const procedures = new Set<string>();
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
      paths.set(path, route);
      remembered++;
    }
    return route;
  };

  function name(method: string, path: string): string {
    if (OPERATIONS.has(path)) return path;
    if (path.startsWith('/docs')) return '/docs';
    if (path.startsWith('/trpc/')) {
      const name = path.slice('/trpc/'.length);
      return procedures.has(name) || procedures.size < 1000 ? (procedures.add(name), `/trpc/${name}`) : '/trpc/other';
    }
    const match = templates.find((t) => (t.method === method || method === 'HEAD') && t.pattern.test(path));
    return match ? match.template : 'unmatched';
  }
}
