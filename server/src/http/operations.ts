import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import express, { Router, type RequestHandler } from 'express';
import { RETRY_AFTER_UNAVAILABLE_SECONDS, UNAVAILABLE_REASON } from '../api/error-policy.ts';
import { openApiDocument } from '../api/openapi.ts';
import type { Orm } from '../db/orm.ts';
import { requestLog } from '../log.ts';
import { sendError } from './errors.ts';
import { setPageHeaders } from './page-headers.ts';
import type { Metrics } from './metrics.ts';

const DOCS_INDEX = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Loupe API</title>
  <link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>
`;
const DOCS_INIT = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true });\n`;

/**
 * The folder of swagger-ui-dist's assets, found by Node's resolution of its package.json. Not the
 * package's `getAbsoluteFSPath`: its main module requires the 3.5 MB browser bundle to export it,
 * which then ran in the server and stayed in its heap for good.
 */
const SWAGGER_ASSETS = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** A promise that rejects after `ms`, for racing a check that may never answer. */
function deadline(ms: number): { promise: Promise<never>; clear(): void } {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return { promise, clear: () => clearTimeout(timer) };
}

/**
 * /health, /ready, /metrics (with credentials), /openapi.json and /docs (Swagger UI from the npm package, no CDN).
 * /ready answers 503 when the database does not answer `select 1` within `readyTimeoutMs`, so a
 * probe learns of an unresponsive database before its own timeout.
 */
export function operationsRouter(orm: Orm, metrics: Metrics, readyTimeoutMs: number, requireUser: RequestHandler): Router {
  const routes = Router();
  routes.get('/health', (_req, res) => {
    res.json({ status: 'ok' });
  });
  routes.get('/ready', async (req, res) => {
    const limit = deadline(readyTimeoutMs);
    try {
      await Promise.race([orm.em.getConnection().execute('select 1'), limit.promise]);
      res.json({ status: 'ready' });
    } catch (error) {
      requestLog(req)?.warn({ err: (error as Error).message }, 'database not reachable');
      sendError(req, res, 503, 'SERVICE_UNAVAILABLE', UNAVAILABLE_REASON, { 'Retry-After': String(RETRY_AFTER_UNAVAILABLE_SECONDS) });
    } finally {
      limit.clear();
    }
  });
  // Not a public route (contract 3): any valid API key may scrape it.
  routes.get('/metrics', requireUser, async (_req, res) => {
    res.setHeader('Content-Type', metrics.registry.contentType);
    res.end(await metrics.registry.metrics());
  });
  const openapi = JSON.stringify(openApiDocument());
  routes.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(openapi);
  });
  // Fail at start-up, not on the first visit, if the package is missing its assets.
  readFileSync(join(SWAGGER_ASSETS, 'swagger-ui-bundle.js'), { flag: 'r' }).subarray(0, 1);
  // Swagger UI is a page of this origin like the web app, under the same headers (its assets too).
  routes.use('/docs', (_req, res, next) => {
    setPageHeaders(res);
    next();
  });
  routes.get(['/docs', '/docs/', '/docs/index.html'], (_req, res) => {
    res.type('html').send(DOCS_INDEX);
  });
  routes.get('/docs/init.js', (_req, res) => {
    res.type('application/javascript').send(DOCS_INIT);
  });
  routes.use('/docs', express.static(SWAGGER_ASSETS, { index: false, maxAge: '1h' }));
  return routes;
}
