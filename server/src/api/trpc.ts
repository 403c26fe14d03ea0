import { initTRPC, TRPCError } from '@trpc/server';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { parseAuthorization } from '../auth/credentials.ts';
import { authenticate, type AuthUser } from '../auth/authenticate.ts';
import { DomainError, invalid, tooLarge } from '../domain/errors.ts';
import { MALFORMED_BODY, malformedJsonReason } from './malformed-body.ts';
import type { Context } from './context.ts';
import { normalizeError, reasonOf, zodIssues } from './error-policy.ts';
import { fieldPath } from '@loupe/shared';
import { findUnstorableText } from './text-safety.ts';

const t = initTRPC
  .context<Context>()
  .meta<OpenApiMeta>()
  .create({
    errorFormatter({ shape, error, ctx }) {
      const { stack: _stack, ...data } = shape.data;
      return {
        ...shape,
        data,
        reason: reasonOf(error),
        request_id: ctx?.requestId ?? null,
        ...(zodIssues(error) ? { issues: zodIssues(error) } : {}),
      };
    },
  });

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

/** The result of the rest of a call, passed on, or its error thrown through the error policy. */
function underErrorPolicy<R extends { ok: true } | { ok: false; error: TRPCError }>(result: R): R {
  if (!result.ok) throw normalizeError((result as { error: TRPCError }).error);
  return result;
}

/** Every procedure's errors leave through the error policy. */
const normalized = t.procedure.use(async ({ next }) => underErrorPolicy(await next()));

export const publicProcedure = normalized;

/**
 * Requires credentials before anything else is looked at (the contract's order of checks puts 401
 * first), and counts failures against the client for the 429 brake. Applies the error policy
 * itself rather than being stacked on `normalized`: every level of tRPC middleware copies the
 * call's options twice, and this one runs on every authenticated call.
 */
export const protectedProcedure = t.procedure.use(async ({ ctx, getRawInput, next }) => {
  let user: AuthUser;
  try {
    user = await admittedUser(ctx, getRawInput);
  } catch (error) {
    throw normalizeError(error instanceof TRPCError ? error : new TRPCError({ code: 'INTERNAL_SERVER_ERROR', cause: error }));
  }
  // tRPC merges this into the context it has (a copy of every key; so no second copy here).
  return underErrorPolicy(await next({ ctx: { user } }));
});

/** The caller, once authenticated and its body found readable and storable; else a DomainError. */
async function admittedUser(ctx: Context, getRawInput: () => Promise<unknown>): Promise<AuthUser> {
  const credentials = parseAuthorization(ctx.authorization);
  const user = credentials ? await authenticate(ctx.sql, credentials) : null;
  if (!user) {
    // A request without an Authorization header is a challenge, not a guess: only tries count.
    // Valid credentials never reach the brake, so it cannot lock out a user who shares an address.
    const retryAfter = ctx.authorization === undefined ? 0 : await ctx.services.authFailures.recordFailure(ctx.client());
    if (retryAfter > 0) {
      throw new DomainError('rate_limited', 'Too many failed authentications from this client; retry later.', retryAfter);
    }
    throw new DomainError(
      'unauthenticated',
      credentials
        ? 'The API key is unknown or revoked, or does not belong to that username.'
        : 'Credentials are required: Authorization: Basic base64(<username>:<api key>) or Bearer <api key>.',
    );
  }
  // After authentication (401 comes first), before the schema: a body that was not JSON, and
  // text no database can store.
  const raw = await getRawInput();
  const malformed = (raw as { [MALFORMED_BODY]?: string } | undefined)?.[MALFORMED_BODY];
  if (malformed !== undefined) throw new DomainError('malformed', malformedJsonReason(malformed));
  const problem = findUnstorableText(raw);
  if (problem) throw invalid(`Invalid request at ${fieldPath(problem.path) || '(body)'}: text ${problem.message}.`);
  return user;
}

/**
 * Refuses a batch over the configured record limit with 413 before its elements are validated, so
 * a client learns to split it whatever else is wrong with it. Runs after authentication.
 */
export const batchLimited = protectedProcedure.use(async ({ ctx, getRawInput, next }) => {
  const raw = (await getRawInput()) as { batch?: unknown } | undefined;
  const max = ctx.services.config.limits.batchRecords;
  if (Array.isArray(raw?.batch) && raw.batch.length > max) {
    throw tooLarge(`The batch holds ${raw.batch.length} records; at most ${max} are accepted in one request. Split it.`);
  }
  return next();
});
