import { expect, it } from 'vitest';
import { RouteTable } from '../../../server/src/http/route-table.ts';

// The HTTP layer finds a REST request's procedure in the route table before reading its body:
// paths match case-insensitively, a trailing slash ignored, one segment per parameter.

const routes = new RouteTable();

it('finds the procedure of a path with its parameters decoded, whatever its case and a trailing slash', () => {
  for (const path of ['/annotation_queues/q1/items/i%3A1/progress', '/Annotation_Queues/q1/items/i%3A1/progress/']) {
    expect(routes.restMatch('POST', path)).toEqual({
      route: { name: '/annotation_queues/{queue_id}/items/{item_id}/progress', protected: true },
      procedure: 'annotationQueues.items.progress',
      params: { queue_id: 'q1', item_id: 'i:1' },
    });
  }
});

it('tells a literal segment from a parameter, and HEAD reads as GET', () => {
  expect(routes.restMatch('POST', '/annotation_queues/q1/items/claim')?.procedure).toBe('annotationQueues.items.claim');
  expect(routes.rest('HEAD', '/me')?.name).toBe('/me');
  expect(routes.rest('GET', '/annotation_queues/q1')?.name).toBe('/annotation_queues/{queue_id}');
});

it('matches nothing for another method, a segment more or less, an empty segment or no leading slash', () => {
  for (const [method, path] of [
    ['GET', '/annotation_queues/q1/items/i1/progress'],
    ['POST', '/annotation_queues/q1/items/i1/progress/more'],
    ['POST', '/annotation_queues/q1/items/progress'],
    ['POST', '/annotation_queues//items/i1/progress'],
    ['POST', 'annotation_queues/q1/items/i1/progress'],
    ['POST', '/annotation_queues/q1/items/i1/progress//'],
  ] as const) {
    expect(routes.restMatch(method, path), `${method} ${path}`).toBeUndefined();
  }
});
