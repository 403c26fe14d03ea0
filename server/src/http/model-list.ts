import { createHash } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { ModelListQuery } from '@loupe/shared';
import type { Context } from '../api/context.ts';
import { createCaller } from '../api/router.ts';
import { MODEL_LIST_PATH } from '../api/routers/models.ts';
import type { ModelCatalog } from '../catalog/catalog.ts';

const CACHE_CONTROL = 'public, max-age=60, stale-while-revalidate=300';
const PATH = new RegExp(`^${MODEL_LIST_PATH.replaceAll('/', '\\/')}\\/?$`, 'i');

type Representation = { body: Buffer; etag: string };

/**
 * The HTTP face of `models.list` on the REST door. Partners poll this route, so each distinct
 * answer is produced once per catalog version by calling the procedure itself (same schema, same
 * output validation) and kept as bytes with a strong ETag; polls are then a header comparison.
 * Filter values the schema rejects fall through to the procedure's REST route for the usual 400.
 */
export function modelListHttp(catalog: ModelCatalog, contextFor: (req: Request, res: Response) => Context) {
  let cache = new Map<string, Representation>();
  catalog.onChange(() => {
    cache = new Map();
  });

  return async (req: Request, res: Response, next: NextFunction) => {
    if (!PATH.test(req.path)) return next();
    res.setHeader('Access-Control-Allow-Origin', '*');
    if (req.method === 'OPTIONS') {
      res.setHeader('Access-Control-Allow-Methods', 'GET, HEAD, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', 'If-None-Match, Content-Type');
      res.setHeader('Access-Control-Max-Age', '86400');
      res.status(204).end();
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    // An empty value (`?feature=`) is no filter, as the REST adapter behind this route reads it;
    // otherwise such a poll would fall through and be answered without ETag or Cache-Control.
    const query = ModelListQuery.safeParse(Object.fromEntries(Object.entries(req.query).filter(([, value]) => value !== '')));
    if (!query.success) return next();
    try {
      const version = catalog.snapshot.version;
      const key = `${version}?${JSON.stringify(query.data, Object.keys(query.data).sort())}`;
      let representation = cache.get(key);
      if (!representation) {
        const list = await createCaller(contextFor(req, res)).models.list(query.data);
        const body = Buffer.from(JSON.stringify(list));
        representation = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
        if (version === catalog.snapshot.version) cache.set(key, representation);
      }
      res.setHeader('ETag', representation.etag);
      res.setHeader('Cache-Control', CACHE_CONTROL);
      res.setHeader('Access-Control-Expose-Headers', 'ETag');
      res.setHeader('Vary', 'Accept-Encoding');
      if (matches(req.headers['if-none-match'], representation.etag)) {
        res.status(304).end();
        return;
      }
      res.setHeader('Content-Type', 'application/json; charset=utf-8');
      res.setHeader('Content-Length', representation.body.length);
      res.status(200).end(req.method === 'HEAD' ? undefined : representation.body);
    } catch (error) {
      next(error);
    }
  };
}

/** RFC 9110 If-None-Match: `*` or a list of entity tags, compared weakly. */
function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag);
}
