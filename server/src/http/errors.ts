import type { NextFunction, Request, Response } from 'express';
import { TRPCError } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import { TRPC_ERROR_CODES_BY_KEY, type TRPC_ERROR_CODE_KEY } from '@trpc/server/rpc';
import type { ErrorBody } from '@loupe/shared';
// `req.id` is declared where it is set.
import type {} from './request-tracker.ts';
import { errorHeaders, INTERNAL_REASON, normalizeError, reasonOf, zodIssues, type Issue } from '../api/error-policy.ts';
import { requestLog } from '../log.ts';
import { carriesBody, onTypedDoor } from './request-kind.ts';

type HttpError = Error & { type?: string; status?: number; statusCode?: number };

/**
 * Every error answer outside tRPC's own: on the REST door the one error envelope of the API
 * document (`ErrorBody`: `{reason, code, request_id, issues?}`), whichever layer refuses; on the
 * typed door tRPC's envelope, which its clients read, with the same fields the error formatter
 * adds (api/trpc.ts).
 */
export function sendError(
  req: Request,
  res: Response,
  status: number,
  code: string,
  reason: string,
  headers: Record<string, string> = {},
  issues?: Issue[],
): void {
  if (res.headersSent) return;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  const requestId = req.id ?? null;
  if (onTypedDoor(req.originalUrl ?? req.url)) {
    const rpcCode = TRPC_ERROR_CODES_BY_KEY[code as TRPC_ERROR_CODE_KEY] ?? TRPC_ERROR_CODES_BY_KEY.BAD_REQUEST;
    res.status(status).json({ error: { message: reason, code: rpcCode, data: { code, httpStatus: status }, reason, request_id: requestId } });
    return;
  }
  const body: ErrorBody = { reason, code, request_id: requestId };
  if (issues) body.issues = issues.map(({ path, message }) => ({ path: path.map((p) => (typeof p === 'number' ? p : String(p))), message }));
  res.status(status).json(body);
}

/** Any failure — a procedure's error or anything thrown — answered through the error policy. */
export function sendFailure(req: Request, res: Response, error: unknown): void {
  const normalized = normalizeError(error instanceof TRPCError ? error : new TRPCError({ code: 'INTERNAL_SERVER_ERROR', cause: error }));
  if (normalized.code === 'INTERNAL_SERVER_ERROR' || normalized.code === 'SERVICE_UNAVAILABLE') {
    requestLog(req)?.error({ err: normalized.cause ?? normalized, code: normalized.code }, 'request failed');
  }
  const status = getHTTPStatusCodeFromError(normalized);
  sendError(req, res, status, normalized.code, reasonOf(normalized), errorHeaders(normalized, req), zodIssues(normalized));
}

/** Unknown routes: a JSON 404 like every other error. */
export function notFound(req: Request, res: Response): void {
  sendError(req, res, 404, 'NOT_FOUND', `No route ${req.method} ${req.path.slice(0, 256)}.`);
}

/** Errors raised outside the procedures get the same JSON shape, never Express's HTML page. */
export function errorHandler(error: HttpError, req: Request, res: Response, _next: NextFunction): void {
  const status = error.status ?? error.statusCode;
  if (status && status >= 400 && status < 500) {
    return sendError(req, res, status, 'BAD_REQUEST', 'The request could not be read.');
  }
  requestLog(req)?.error({ err: error }, 'unhandled error');
  sendError(req, res, 500, 'INTERNAL_SERVER_ERROR', INTERNAL_REASON);
}

/**
 * Before answering a request whose body is left unread. A body of a declared length within the
 * limit is drained (Node discards what is left once the answer is sent; nothing is kept), so the
 * client reads its answer and may reuse the connection. Any other body gets `Connection: close`:
 * a client that goes on sending into a closed connection may see a reset instead of the answer,
 * which is the price of not reading an unbounded body.
 */
export function leaveBodyUnread(req: Request, res: Response, maxBytes: number): void {
  if (!carriesBody(req.method)) return;
  const declared = req.headers['content-length'];
  if (declared === undefined || Number(declared) > maxBytes) res.setHeader('Connection', 'close');
}

/**
 * A body that is not JSON is refused with 415 before anything reads it. What passes goes on with
 * the media type spelled `application/json`: tRPC's adapter compares it case-sensitively and wants
 * it even when there is no body, and it refuses before a request context exists, so its answer
 * would carry no request_id. A request without a body is read as an empty JSON body.
 */
export const requireJsonBody = (maxBytes: number) => (req: Request, res: Response, next: NextFunction): void => {
  if (!carriesBody(req.method)) return next();
  const type = req.headers['content-type'];
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  if (type === undefined ? hasBody : !/^application\/json\s*(;|$)/i.test(type)) {
    leaveBodyUnread(req, res, maxBytes);
    return sendError(req, res, 415, 'UNSUPPORTED_MEDIA_TYPE', 'The request body must be JSON (Content-Type: application/json).');
  }
  req.headers['content-type'] = type === undefined ? 'application/json' : type.replace(/^application\/json/i, 'application/json');
  next();
};
