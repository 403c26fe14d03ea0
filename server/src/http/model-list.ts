import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { ModelListQuery } from '@loupe/shared';
import type { Context } from '../api/context.ts';
import { createCaller } from '../api/router.ts';
import { MODEL_LIST_PATH } from '../api/routers/models.ts';
import type { ModelCatalog } from '../catalog/catalog.ts';

const CACHE_CONTROL = 'public, max-age=60, stale-while-revalidate=300';
const PATH = new RegExp(`^${MODEL_LIST_PATH.replaceAll('/', '\\/')}\\/?$`, 'i');

type Representation = { body: Buffer; etag: string; headers: Record<string, string>; notModifiedHeaders: Record<string, string> };

/**
 * The HTTP face of `models.list` on the REST door. Partners poll this route, so each distinct
 * answer is produced once per catalog version by calling the procedure itself (same schema, same
 * output validation) and kept as bytes with a strong ETag; polls are then a header comparison.
 * Filter values the schema rejects fall through to the procedure's REST route for the usual 400.
 *
 * `answerPoll` answers the plain poll from its kept bytes before Express sees the request (Express
 * gives every request it handles new prototypes; skipping it took the poll from 0.78 to 0.85 of a
 * bare Express route); `middleware` answers everything else on this path, and produces what is kept.
 */
export function modelListHttp(catalog: ModelCatalog, contextFor: (req: Request, res: Response) => Context) {
  // The answer to the plain poll (no query string) is kept apart: it needs no key at all.
  let plain: Representation | undefined;
  let filtered = new Map<string, Representation>();
  catalog.onChange(() => {
    plain = undefined;
    filtered = new Map();
  });

  const send = (req: IncomingMessage, res: ServerResponse, representation: Representation) => {
    if (matches(req.headers['if-none-match'], representation.etag)) {
      res.writeHead(304, representation.notModifiedHeaders).end();
      return;
    }
    res.writeHead(200, representation.headers).end(req.method === 'HEAD' ? undefined : representation.body);
  };

  const produce = async (req: Request, res: Response, query: ModelListQuery | undefined): Promise<Representation> => {
    const version = catalog.snapshot.version;
    const list = await createCaller(contextFor(req, res)).models.list(query ?? {});
    const representation = represent(Buffer.from(JSON.stringify(list)));
    if (version === catalog.snapshot.version) {
      if (query) filtered.set(keyOf(version, query), representation);
      else plain = representation;
    }
    return representation;
  };

  const answerPoll = (req: IncomingMessage, res: ServerResponse): boolean => {
    if (plain === undefined || req.url !== MODEL_LIST_PATH || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
    res.setHeader('Access-Control-Allow-Origin', '*');
    send(req, res, plain);
    return true;
  };

  const middleware = (req: Request, res: Response, next: NextFunction) => {
    if (!PATH.test(req.path)) return next();
    res.setHeader('Access-Control-Allow-Origin', '*');
    if (req.method === 'OPTIONS') {
      res.writeHead(204, PREFLIGHT_HEADERS).end();
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    let query: ModelListQuery | undefined;
    if (req.url.includes('?')) {
      // An empty value (`?feature=`) is no filter, as the REST adapter behind this route reads it;
      // otherwise such a poll would fall through and be answered without ETag or Cache-Control.
      const parsed = ModelListQuery.safeParse(Object.fromEntries(Object.entries(req.query).filter(([, value]) => value !== '')));
      if (!parsed.success) return next();
      query = parsed.data;
    }
    const cached = query ? filtered.get(keyOf(catalog.snapshot.version, query)) : plain;
    if (cached) return send(req, res, cached);
    produce(req, res, query).then((representation) => send(req, res, representation), next);
  };

  return { answerPoll, middleware };
}

function keyOf(version: string, query: ModelListQuery): string {
  return `${version}?${JSON.stringify(query, Object.keys(query).sort())}`;
}

const PREFLIGHT_HEADERS = {
  'Access-Control-Allow-Methods': 'GET, HEAD, OPTIONS',
  'Access-Control-Allow-Headers': 'If-None-Match, Content-Type',
  'Access-Control-Max-Age': '86400',
};

function represent(body: Buffer): Representation {
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  const notModifiedHeaders = {
    ETag: etag,
    'Cache-Control': CACHE_CONTROL,
    'Access-Control-Expose-Headers': 'ETag',
    Vary: 'Accept-Encoding',
  };
  const headers = { ...notModifiedHeaders, 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(body.length) };
  return { body, etag, headers, notModifiedHeaders };
}

/** RFC 9110 If-None-Match: `*` or a list of entity tags, compared weakly. */
function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header === etag) return true;
  if (header.trim() === '*') return true;
  return header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag);
}
