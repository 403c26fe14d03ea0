import type { NextFunction, Request, Response } from 'express';
import { bindRequestLog, type Logger } from '../log.ts';
import type { Metrics } from './metrics.ts';
import { newId } from '../domain/ids.ts';

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

declare module 'node:http' {
  interface IncomingMessage {
    id?: string;
  }
}

/**
 * Gives each request its id (the client's `X-Request-Id` when it is sane, else a new UUIDv7), a
 * logger that carries it (`requestLog`) and the `X-Request-Id` response header; when the answer is sent, one
 * access-log line and the request metrics (one listener for both: this runs for every request).
 */
export function requestContext(log: Logger, metrics: Metrics, routeOf: (method: string, path: string) => string) {
  return (req: Request, res: Response, next: NextFunction) => {
    const offered = req.headers['x-request-id'];
    const id = typeof offered === 'string' && CLIENT_REQUEST_ID.test(offered) ? offered : newId();
    const started = process.hrtime.bigint();
    req.id = id;
    bindRequestLog(req, log);
    res.setHeader('X-Request-Id', id);
    res.on('finish', () => {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      metrics.observe(req.method, routeOf(req.method, req.path), res.statusCode, durationMs / 1000);
      const level = res.statusCode >= 500 ? 'error' : 'info';
      log[level](
        { request_id: id, method: req.method, url: req.originalUrl, status: res.statusCode, duration_ms: Math.round(durationMs * 1000) / 1000 },
        'request',
      );
    });
    next();
  };
}
