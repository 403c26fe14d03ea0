import type { RequestListener } from 'node:http';
import { TRPCError } from '@trpc/server';
import { createExpressMiddleware } from '@trpc/server/adapters/express';
import express from 'express';
import { NEXT_CURSOR_HEADER } from '@loupe/shared/headers';
import { contextFactory, type Context } from './api/context.ts';
import type { Services } from './api/services.ts';
import { errorHeaders } from './api/error-policy.ts';
import { DomainError } from './domain/errors.ts';
import { passwordHashesRun } from './auth/passwords.ts';
import { appRouter } from './api/router.ts';
import { typedDoorRequestId } from './api/trpc.ts';
import { admission, userRequirement } from './http/admission.ts';
import { bodyText, jsonBodyReader } from './http/body.ts';
import { errorHandler, notFound, requireJsonBody } from './http/errors.ts';
import { Metrics } from './http/metrics.ts';
import { modelListHttp } from './http/model-list.ts';
import { oidcRoutes } from './http/oidc-routes.ts';
import { operationsRouter } from './http/operations.ts';
import { otlpTracesHttp } from './http/otlp-traces.ts';
import { onTypedDoor } from './http/request-kind.ts';
import { RequestTracker } from './http/request-tracker.ts';
import { restDoor } from './http/rest-door.ts';
import { RouteTable } from './http/route-table.ts';
import { routeNamer } from './http/routes.ts';
import { webApp } from './http/web-app.ts';

/**
 * The typed door's response headers: every error in one response shares the status, and the first
 * decides the extra headers. tRPC answers some errors before any context exists (a batch mixing
 * queries and mutations, an unsupported media type) as text/plain: every error of this door is JSON.
 *
 * A single query answered with a next page repeats that page's cursor in `Loupe-Next-Cursor`: a
 * client reads headers before the body, so it can ask for the next page while it still parses this one.
 */
function typedDoorMeta({ ctx, errors, data }: { ctx?: Context | undefined; errors: readonly TRPCError[]; data: readonly unknown[] }) {
  const first = errors[0];
  if (first) return { headers: { ...errorHeaders(first, ctx?.res.req), 'Content-Type': 'application/json' } };
  const cursor = data.length === 1 ? nextCursorOf(data[0]) : undefined;
  return cursor && cursor.length <= MAX_HINTED_CURSOR ? { headers: { [NEXT_CURSOR_HEADER]: cursor } } : {};
}

/** Longer cursors (long sort values) are left to the body: the header is a hint, kept small. */
const MAX_HINTED_CURSOR = 2048;

/** The `next_cursor` of a query's answer (contract 5.6), when it names a next page. */
function nextCursorOf(response: unknown): string | undefined {
  const answer = (response as { result?: { data?: { next_cursor?: unknown } } } | undefined)?.result?.data;
  return typeof answer?.next_cursor === 'string' ? answer.next_cursor : undefined;
}

function onError({ error, ctx }: { error: TRPCError; ctx?: { log?: () => Services['log'] } | undefined }) {
  // A 503 the domain chose (an event stream ending to be renewed) is no fault.
  if ((error.code === 'INTERNAL_SERVER_ERROR' || error.code === 'SERVICE_UNAVAILABLE') && !(error.cause instanceof DomainError)) {
    ctx?.log?.().error({ err: error.cause ?? error, code: error.code }, 'request failed');
  }
}

/**
 * The HTTP server's request listener: every request is tracked (id, access line, metrics); the
 * plain model-list poll is answered from kept bytes; everything else goes to the Express
 * application (operations routes, the typed door at /trpc, the REST door). `drained` resolves once
 * every response begun so far has written its access line.
 */
export function createApp(services: Services): { listener: RequestListener; drained: () => Promise<void> } {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', services.config.trustProxy);
  const createContext = contextFactory(services);
  const metrics = new Metrics(services.orm, { openEventStreams: () => services.eventStreams.open, passwordHashes: passwordHashesRun });

  const routes = new RouteTable();
  const requests = new RequestTracker(services.log, metrics, routeNamer(routes));
  const modelList = modelListHttp(services.catalog, (req, res) => createContext({ req, res }));
  app.use(modelList.middleware);
  // Every operations route is a GET (Express answers HEAD and OPTIONS for it): requests with a
  // body skip matching their paths.
  const operations = operationsRouter(services.orm, metrics, services.config.dbTimeouts.connectMs, userRequirement(services));
  const operationMethods = new Set(['GET', 'HEAD', 'OPTIONS']);
  app.use((req, res, next) => (operationMethods.has(req.method) ? operations(req, res, next) : next()));
  // Single sign-on's browser routes (GET only, no body): redirects and a page, beside the API.
  app.use(oidcRoutes(services));
  // OpenTelemetry's OTLP/HTTP routes read protobuf and gzip bodies with their own reader (same limits).
  app.use(otlpTracesHttp(services));
  // Nothing of a body is read before its route is known and its credentials are checked.
  const { limits } = services.config;
  app.use(requireJsonBody(limits.bodyBytes));
  app.use(admission(services, routes));
  app.use(
    jsonBodyReader({
      maxBytes: limits.bodyBytes,
      maxDepth: limits.jsonDepth,
      waitMs: limits.bodyWaitMs,
      minRate: limits.bodyMinRate,
      timeoutMs: limits.bodyTimeoutMs,
    }, services.heapBudget, { keepText: (req) => onTypedDoor(req.path) }),
  );

  const typedDoor = createExpressMiddleware({
    router: appRouter,
    createContext: ({ req, res }) => createContext({ req, res }),
    responseMeta: typedDoorMeta,
    onError,
    maxBodySize: services.config.limits.bodyBytes,
    // A query with a long input (many ids) comes as a POST: in a URL it would pass the header bound.
    allowMethodOverride: true,
  });
  // The request id is in scope for the error formatter even when no context was made. tRPC reads a
  // string body as it is, and serialises an object body again before parsing it: it gets the text.
  app.use('/trpc', (req, res, next) => {
    const text = bodyText(req);
    if (text !== undefined) req.body = text;
    typedDoorRequestId.run(req.id ?? '', () => typedDoor(req, res, next));
  });
  app.use(restDoor(routes, (req, res) => createContext({ req, res })));
  app.use(webApp());
  app.use(notFound);
  app.use(errorHandler);
  const listener: RequestListener = (req, res) => {
    requests.track(req, res);
    if (!modelList.answerPoll(req, res)) app(req, res);
  };
  return { listener, drained: () => requests.drained() };
}
