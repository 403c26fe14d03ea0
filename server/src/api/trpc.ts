import { AsyncLocalStorage } from 'node:async_hooks';
import { initTRPC, TRPCError } from '@trpc/server';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { DomainError, invalid, tooLarge } from '../domain/errors.ts';
import type { Context } from './context.ts';
import { normalizeError, reasonOf, zodIssues } from './error-policy.ts';
import { fieldPath } from '@loupe/shared';
import { findUnstorableText } from './text-safety.ts';

/** The id of the typed-door request being answered, for errors tRPC raises before a context exists. */
export const typedDoorRequestId = new AsyncLocalStorage<string>();

/**
 * Event streams (subscriptions over server-sent events) carry a comment line this often when
 * nothing else is sent, so that proxies and load balancers do not end them as idle (their
 * timeouts are commonly 30–60 s); a client that hears nothing, not even that, for three intervals
 * takes the connection for dead and reconnects.
 */
export const EVENT_STREAM_PING_MS = 10_000;

const t = initTRPC
  .context<Context>()
  .meta<OpenApiMeta>()
  .create({
    sse: {
      ping: { enabled: true, intervalMs: EVENT_STREAM_PING_MS },
      client: { reconnectAfterInactivityMs: 3 * EVENT_STREAM_PING_MS },
    },
    errorFormatter({ shape, error, ctx }) {
      const { stack: _stack, ...data } = shape.data;
      return {
        ...shape,
        data,
        reason: reasonOf(error),
        request_id: ctx?.requestId || typedDoorRequestId.getStore() || null,
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

/**
 * A subscription's events, with an error that ends the stream passed through the error policy too
 * (tRPC sends it as the stream's error event, outside the middleware that handles calls).
 */
export async function* streamUnderErrorPolicy<T>(events: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* events;
  } catch (error) {
    throw normalizeError(error instanceof TRPCError ? error : new TRPCError({ code: 'INTERNAL_SERVER_ERROR', cause: error }));
  }
}

/** Every procedure's errors leave through the error policy. */
const normalized = t.procedure.use(async ({ next }) => underErrorPolicy(await next()));

export const publicProcedure = normalized;

/**
 * The caller of a protected procedure. Credentials were checked by the HTTP layer before the body
 * was read (http/admission.ts); a call that reached here without them is refused (fail closed).
 * Then the raw input is checked for text no database can store. Applies the error policy itself
 * rather than being stacked on `normalized`: every level of tRPC middleware copies the call's
 * options twice, and this one runs on every authenticated call.
 */
export const protectedProcedure = t.procedure.use(async ({ ctx, getRawInput, next }) => {
  const user = ctx.admitted;
  try {
    if (!user) throw ctx.refused ?? new DomainError('unauthenticated', 'Credentials are required.');
    const problem = findUnstorableText(await getRawInput());
    if (problem) throw invalid(`Invalid request at ${fieldPath(problem.path) || '(body)'}: text ${problem.message}.`);
  } catch (error) {
    throw normalizeError(error instanceof TRPCError ? error : new TRPCError({ code: 'INTERNAL_SERVER_ERROR', cause: error }));
  }
  // tRPC merges this into the context it has (a copy of every key; so no second copy here).
  return underErrorPolicy(await next({ ctx: { user } }));
});

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
