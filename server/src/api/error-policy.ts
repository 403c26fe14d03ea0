import type { IncomingMessage } from 'node:http';
import { TRPCError } from '@trpc/server';
import type { TRPC_ERROR_CODE_KEY } from '@trpc/server/rpc';
import { fieldPath } from '@loupe/shared';
import { ZodError } from 'zod';
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import { DomainError, type DomainErrorKind } from '../domain/errors.ts';

// The one place where failures become HTTP answers. Domain errors carry their own reason; every
// other fault is masked here and nowhere else.

const CODE_OF_KIND: Record<DomainErrorKind, TRPC_ERROR_CODE_KEY> = {
  invalid: 'BAD_REQUEST',
  malformed: 'PARSE_ERROR',
  unauthenticated: 'UNAUTHORIZED',
  forbidden: 'FORBIDDEN',
  not_found: 'NOT_FOUND',
  conflict: 'CONFLICT',
  too_large: 'PAYLOAD_TOO_LARGE',
  rate_limited: 'TOO_MANY_REQUESTS',
  unavailable: 'SERVICE_UNAVAILABLE',
};

export const INTERNAL_REASON = 'An unexpected error occurred; the request_id identifies it in the server log.';
export const UNAVAILABLE_REASON = 'The database is unavailable; retry shortly.';
export const RETRY_AFTER_UNAVAILABLE_SECONDS = 5;

/** Gives every error that leaves a procedure its final tRPC code and client-facing message. */
export function normalizeError(error: TRPCError): TRPCError {
  const cause = error.cause;
  if (cause instanceof DomainError) {
    return new TRPCError({ code: CODE_OF_KIND[cause.kind], message: cause.message, cause });
  }
  if (isDatabaseUnavailable(cause) || isDatabaseUnavailable(error)) {
    return new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: UNAVAILABLE_REASON, cause: error.cause ?? error });
  }
  if (error.code === 'INTERNAL_SERVER_ERROR') {
    return new TRPCError({ code: 'INTERNAL_SERVER_ERROR', message: INTERNAL_REASON, cause: error.cause ?? error });
  }
  return error;
}

export type Issue = { path: PropertyKey[]; message: string };

/**
 * The schema issues of a request's input. Only a 400 reports them: a ZodError behind any other
 * code is the output schema refusing the server's own answer, a fault of the server (500, with the
 * generic reason; the issues go to the log only).
 */
export function zodIssues(error: TRPCError): Issue[] | undefined {
  return error.code === 'BAD_REQUEST' && error.cause instanceof ZodError ? error.cause.issues : undefined;
}

/** The `reason` of an error body: one sentence, naming the field for schema violations. */
export function reasonOf(error: TRPCError): string {
  const issues = zodIssues(error);
  if (issues?.length) {
    const first = issues[0]!;
    const where = first.path.length ? ` at ${fieldPath(first.path)}` : '';
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more issue${issues.length > 2 ? 's' : ''})` : '';
    return `Invalid request${where}: ${first.message}${more}.`;
  }
  if (error.code === 'INTERNAL_SERVER_ERROR') return INTERNAL_REASON;
  if (error.code === 'SERVICE_UNAVAILABLE' && !(error.cause instanceof DomainError)) return UNAVAILABLE_REASON;
  return error.message;
}

/** Headers an error status needs: the auth challenge on 401, a retry hint on 429 and 503. */
export function errorHeaders(error: TRPCError, req: IncomingMessage | undefined): Record<string, string> {
  switch (error.code) {
    case 'UNAUTHORIZED':
      return req !== undefined && fromLoupePage(req) ? {} : { 'WWW-Authenticate': 'Basic realm="loupe"' };
    case 'TOO_MANY_REQUESTS': {
      const seconds = error.cause instanceof DomainError ? error.cause.retryAfterSeconds : undefined;
      return { 'Retry-After': String(seconds ?? 60) };
    }
    case 'SERVICE_UNAVAILABLE':
      return { 'Retry-After': String(RETRY_AFTER_UNAVAILABLE_SECONDS) };
    default:
      return {};
  }
}

/**
 * Whether a request is a script of Loupe's own pages (the web app's fetch, an EventSource):
 * the browser marks it `Sec-Fetch-Site: same-origin` and a mode other than `navigate`, and no
 * other client sends that pair. Such a 401 goes without the Basic challenge: the page answers it
 * itself (its sign-in form), whereas the challenge would make the browser open its own password
 * prompt over the page, and the app's requests carry the session cookie (so they cannot leave
 * credentials out to avoid it). Every other client (curl, the CLI, a page typed in the address
 * bar) still gets the challenge.
 */
function fromLoupePage(req: IncomingMessage): boolean {
  const mode = req.headers['sec-fetch-mode'];
  return req.headers['sec-fetch-site'] === 'same-origin' && mode !== undefined && mode !== 'navigate';
}
