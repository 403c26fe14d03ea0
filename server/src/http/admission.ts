import type { NextFunction, Request, Response } from 'express';
import { admit, refuse } from '../api/request-admission.ts';
import type { Services } from '../api/services.ts';
import { authenticate } from '../auth/authenticate.ts';
import type { AuthUser } from '../domain/auth-user.ts';
import { parseAuthorization } from '../auth/credentials.ts';
import { DomainError } from '../domain/errors.ts';
import { cookieUser } from '../auth/cookie-session.ts';
import { leaveBodyUnread, sendError, sendFailure } from './errors.ts';
import { carriesBody, onTypedDoor } from './request-kind.ts';
import { MAX_TRPC_BATCH, type RouteTable } from './route-table.ts';

/**
 * Decides, from the method, path and headers alone, whether a request may go on to have its body
 * read: the route must name procedures (a body sent anywhere else is refused unread), the typed
 * door's batches are bounded, and the credentials of a protected route are checked first — an
 * anonymous client never gets a byte of its body parsed.
 */
export function admission(services: Services, routes: RouteTable) {
  const requireUser = userRequirement(services);
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    let needsUser: boolean;
    if (onTypedDoor(req.path)) {
      if (req.method !== 'GET' && req.method !== 'POST') {
        leaveBodyUnread(req, res, services.config.limits.bodyBytes);
        return sendError(req, res, 405, 'METHOD_NOT_SUPPORTED', `The typed door answers GET (queries) and POST (mutations), not ${req.method.slice(0, 16)}.`, { Allow: 'GET, POST' });
      }
      // A GET has no body: a media type on it means nothing (tRPC would refuse the request for it).
      if (req.method === 'GET') delete req.headers['content-type'];
      const match = routes.trpc(req.path);
      if (match.tooMany) {
        leaveBodyUnread(req, res, services.config.limits.bodyBytes);
        return sendError(req, res, 400, 'BAD_REQUEST', `A batched request may name at most ${MAX_TRPC_BATCH} procedures.`);
      }
      if (match.unknown !== undefined) {
        leaveBodyUnread(req, res, services.config.limits.bodyBytes);
        return sendError(req, res, 404, 'NOT_FOUND', `No procedure "${match.unknown.slice(0, 128)}".`);
      }
      needsUser = match.procedures.some((p) => p.protected);
    } else {
      const route = routes.rest(req.method, req.path);
      if (!route) {
        if (!carriesBody(req.method)) return next(); // the REST adapter or the 404 handler answers
        leaveBodyUnread(req, res, services.config.limits.bodyBytes);
        return sendError(req, res, 404, 'NOT_FOUND', `No route ${req.method} ${req.path.slice(0, 256)}.`);
      }
      needsUser = route.protected;
    }
    if (!needsUser) return next();
    return requireUser(req, res, next);
  };
}

/**
 * Authenticates a request from its Authorization header, before its body is read. A valid key is
 * always admitted; failed tries are counted against the client and, past the limit, answered 429
 * instead of 401. Also guards routes outside the router that need credentials (/metrics).
 */
export function userRequirement(services: Services) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    try {
      admit(req, await authenticated(services, req));
    } catch (error) {
      leaveBodyUnread(req, res, services.config.limits.bodyBytes);
      if (onTypedDoor(req.path)) {
        refuse(req, error);
        return next();
      }
      return sendFailure(req, res, error);
    }
    next();
  };
}

/**
 * Authenticates a request of a route outside the router (OpenTelemetry ingest) before its body is
 * read, as `userRequirement` does: the user, or undefined once the refusal (401, 429) is answered.
 */
export async function authenticateRequest(services: Services, req: Request, res: Response): Promise<AuthUser | undefined> {
  try {
    const user = await authenticated(services, req);
    admit(req, user);
    return user;
  } catch (error) {
    leaveBodyUnread(req, res, services.config.limits.bodyBytes);
    sendFailure(req, res, error);
    return undefined;
  }
}

async function authenticated(services: Services, req: Request): Promise<AuthUser> {
  const header = req.headers.authorization;
  // A request with an Authorization header is a program's: its key decides, whatever cookie it carries.
  if (header === undefined) {
    const session = await cookieUser(services.orm.em, req, services.config.people);
    if (session) return session;
  }
  const credentials = parseAuthorization(header);
  const user = credentials ? await authenticate(services.orm.em, credentials) : null;
  if (user) return user;
  // A request without an Authorization header is a challenge, not a guess: only tries count.
  // Valid credentials never reach the brake, so it cannot lock out a user who shares an address.
  if (header !== undefined) {
    const retryAfter = await services.authFailures.recordFailure(req.ip ?? req.socket.remoteAddress ?? 'unknown');
    if (retryAfter > 0) {
      throw new DomainError('rate_limited', 'Too many failed authentications from this client; retry later.', retryAfter);
    }
  }
  throw new DomainError(
    'unauthenticated',
    credentials
      ? 'The API key is unknown or revoked, or does not belong to that username.'
      : 'Credentials are required: Authorization: Basic base64(<username>:<api key>) or Bearer <api key>, or a session cookie (POST /auth/sign-in).',
  );
}
