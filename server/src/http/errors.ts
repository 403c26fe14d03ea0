import type { NextFunction, Request, Response } from 'express';
import { INTERNAL_REASON } from '../api/error-policy.ts';
import { MALFORMED_BODY, malformedJsonReason } from '../api/malformed-body.ts';
import { requestLog } from '../log.ts';

type HttpError = Error & { type?: string; status?: number; statusCode?: number };

function send(req: Request, res: Response, status: number, code: string, reason: string): void {
  if (res.headersSent) return;
  res.status(status).json({ reason, code, request_id: req.id ?? null });
}

/** Unknown routes: a JSON 404 like every other error. */
export function notFound(req: Request, res: Response): void {
  send(req, res, 404, 'NOT_FOUND', `No route ${req.method} ${req.path}.`);
}

/**
 * Errors raised outside the procedures (body parsing above all) get the same JSON shape as the
 * procedures' errors, never Express's HTML page.
 */
export function errorHandler(error: HttpError, req: Request, res: Response, _next: NextFunction): void {
  switch (error.type) {
    case 'entity.parse.failed':
      return send(req, res, 400, 'PARSE_ERROR', malformedJsonReason(error.message));
    case 'entity.too.large':
      return send(req, res, 413, 'PAYLOAD_TOO_LARGE', 'The request body is larger than the server accepts.');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return send(req, res, 415, 'UNSUPPORTED_MEDIA_TYPE', `The request body's encoding is not supported: ${error.message}.`);
    case 'request.aborted':
      return send(req, res, 400, 'BAD_REQUEST', 'The request body was not received completely.');
  }
  const status = error.status ?? error.statusCode;
  if (status && status >= 400 && status < 500) {
    return send(req, res, status, 'BAD_REQUEST', 'The request could not be read.');
  }
  requestLog(req)?.error({ err: error }, 'unhandled error');
  send(req, res, 500, 'INTERNAL_SERVER_ERROR', INTERNAL_REASON);
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/**
 * A body that is not JSON is refused with 415 before anything reads it. What passes goes on with
 * the media type spelled `application/json`: the REST adapter compares it case-sensitively and
 * wants it even when there is no body, and it refuses before a request context exists, so its
 * answer would carry no request_id. A request without a body is read as an empty JSON body.
 */
export function requireJsonBody(req: Request, res: Response, next: NextFunction): void {
  if (!BODY_METHODS.has(req.method)) return next();
  const type = req.headers['content-type'];
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  if (type === undefined ? hasBody : !/^application\/json\s*(;|$)/i.test(type)) {
    return send(req, res, 415, 'UNSUPPORTED_MEDIA_TYPE', 'The request body must be JSON (Content-Type: application/json).');
  }
  req.headers['content-type'] = type === undefined ? 'application/json' : type.replace(/^application\/json/i, 'application/json');
  next();
}

/**
 * The contract checks credentials before the body: on the REST door a malformed JSON body is
 * handed on as a marker (a symbol key survives the adapter's spread of body and path
 * parameters), and protectedProcedure answers 401 or the 400 in that order. The typed door,
 * whose clients always send JSON, answers the 400 at once.
 */
export function deferMalformedJson(error: HttpError, req: Request, _res: Response, next: NextFunction): void {
  if (error.type !== 'entity.parse.failed' || req.path.startsWith('/trpc')) return next(error);
  req.body = { [MALFORMED_BODY]: error.message };
  next();
}
