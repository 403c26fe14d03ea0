import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAuthBrake } from './auth/brake.ts';
import { OidcClient } from './auth/oidc-client.ts';
import { OidcStateSeal } from './auth/oidc-state.ts';
import { ModelCatalog } from './catalog/catalog.ts';
import type { Config } from './config.ts';
import { maskedDatabaseUrl } from './db/database-url.ts';
import { dialectOf, openDatabase } from './db/orm.ts';
import { serverSecret } from './db/server-secret.ts';
import { lockSqliteFile } from './db/sqlite-server-lock.ts';
import { CursorSeal } from './domain/cursor.ts';
import { createLogger, type Logger } from './log.ts';
import { createApp } from './app.ts';
import { clientErrorAnswer } from './http/client-error.ts';
import { limitConnections } from './http/connection-limits.ts';
import type { Services } from './api/services.ts';
import { createQueueEvents } from './events/create-queue-events.ts';
import { checkStreamAccessPeriodically } from './events/stream-access-check.ts';
import { StreamSlots } from './events/stream-slots.ts';
import { heapBudgetOf } from './domain/heap-budget.ts';
import { RuleBackfillWorker } from './domain/rule-backfill.ts';
import { lookup } from 'node:dns/promises';
import type { ResolveHost } from './domain/webhook-addresses.ts';
import { SecretBox } from './domain/webhook-secrets.ts';
import { DeliveryWorker } from './webhooks/delivery-worker.ts';

export type RunningServer = {
  url: string;
  services: Services;
  /** Stops accepting connections, lets in-flight requests finish, then closes the database. */
  close(): Promise<void>;
};

/** Parts a test may replace: the resolver of webhook hosts (to make a name resolve as the test says). */
export type ServerParts = { resolveHost?: ResolveHost };

/** The system's resolver, every address of the host. */
const systemResolve: ResolveHost = (hostname) => lookup(hostname, { all: true, verbatim: true });

export async function startServer(config: Config, log: Logger = createLogger(config.logLevel), parts: ServerParts = {}): Promise<RunningServer> {
  const catalog = new ModelCatalog(config.modelCatalogPath, log);
  // Before anything opens the file: a second server process on it stops here.
  const lock = dialectOf(config.databaseUrl) === 'sqlite' ? lockSqliteFile(config.databaseUrl.slice('sqlite:'.length)) : undefined;
  try {
    return await serve({ config, log, catalog, parts }, lock?.release);
  } catch (error) {
    catalog.close();
    lock?.release();
    throw error;
  }
}

type Serving = { config: Config; log: Logger; catalog: ModelCatalog; parts: ServerParts };

async function serve({ config, log, catalog, parts }: Serving, unlock = () => {}): Promise<RunningServer> {
  const orm = await openDatabase(config.databaseUrl, config.dbPoolSize, { timeouts: config.dbTimeouts });
  let secret: string;
  try {
    secret = await serverSecret(orm, config.secret);
  } catch (error) {
    await orm.close(true);
    throw error;
  }
  const cursorSeal = new CursorSeal(secret);
  const box = new SecretBox(secret);
  const resolve = parts.resolveHost ?? systemResolve;
  const worker = new DeliveryWorker({ db: orm.em, settings: config.webhooks, box, resolve, log });
  const queueEvents = createQueueEvents({ config, db: orm.em, log, webhooks: worker });
  const { backfillChunk: chunk, backfillPauseMs: pauseMs, backfillPollMs: pollMs, backfillLeaseMs: leaseMs } = config.rules;
  const ruleBackfills = new RuleBackfillWorker({ db: orm.em, events: queueEvents, log, settings: { chunk, pauseMs, pollMs, leaseMs } });
  const services: Services = {
    config,
    orm,
    log,
    catalog,
    authFailures: createAuthBrake(orm, dialectOf(config.databaseUrl), { limit: config.limits.authFailuresPerMinute }, log),
    queueEvents,
    eventStreams: new StreamSlots(config.eventStreams),
    cursorSeal,
    heapBudget: heapBudgetOf(config.limits.bodyBudget, config.limits.bodyShare),
    ruleBackfills,
    webhooks: { box, resolve, worker },
    // Nothing is asked of the provider here: its metadata is fetched at the first sign-in.
    singleSignOn: config.people.oidc ? { client: new OidcClient(config.people.oidc), seal: new OidcStateSeal(secret) } : undefined,
  };
  // Listening before the first request: a subscription opened right after start-up misses nothing.
  await waitAtMost(services.queueEvents.ready(), config.dbTimeouts.connectMs);
  if (config.watchCatalog) catalog.watch();
  ruleBackfills.start();
  const stopStreamAccessCheck = checkStreamAccessPeriodically(orm.em, services.eventStreams, config.eventStreams.recheckMs, log);
  // Deliveries left by a previous run (or by other processes) are sent from now on.
  worker.start();
  const { listener, drained } = createApp(services);
  const { connections, limits } = config;
  const server: Server = createServer(
    {
      // A request head must arrive within this time; Node counts it from a request's first byte,
      // and for a fresh connection from its opening, so a connection that sends nothing is closed
      // too. Idle time between requests of a keep-alive connection is not counted.
      headersTimeout: connections.headersTimeoutMs,
      // A backstop over the body's own limits (http/body.ts answers those with a reason).
      requestTimeout: connections.headersTimeoutMs + limits.bodyTimeoutMs + 5_000,
      // How often those two are checked (Node's default is 30 s).
      connectionsCheckingInterval: 1_000,
    },
    listener,
  );
  limitConnections(server, connections, log);
  server.listen(config.port, config.host);
  server.on('clientError', clientErrorAnswer(log));
  // Keep idle connections longer than the usual 60 s of load balancers and client pools, so that
  // the server is never the side that closes a connection a client is about to reuse.
  server.keepAliveTimeout = 65_000;
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  log.info({ url, database: maskedDatabaseUrl(config.databaseUrl), models: catalog.snapshot.models.length }, 'loupe listening');

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      log.info('shutting down: no new connections; waiting for in-flight requests');
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // Open event streams would hold their connections to the end: they end now, and their
      // clients reconnect (to another process, or to this service once it is back).
      services.queueEvents.endStreams();
      stopStreamAccessCheck();
      // Attempts under way end now; their deliveries are due again at once, for any process.
      const workerClosed = worker.close();
      // Their keep-alive connections (and any other) close as soon as they go idle, instead of at
      // the shutdown timeout; a client reconnecting meanwhile would otherwise hold them open.
      const idleSweep = setInterval(() => server.closeIdleConnections(), 50);
      const timer = setTimeout(() => {
        log.warn({ timeout_ms: config.shutdownTimeoutMs }, 'shutdown timeout: closing remaining connections');
        server.closeAllConnections();
      }, config.shutdownTimeoutMs);
      await closed;
      clearInterval(idleSweep);
      // A response's access line and metrics are written when it closes, which can come after
      // the server's own close callback.
      await drained();
      await workerClosed;
      clearTimeout(timer);
      await ruleBackfills.stop();
      catalog.close();
      await services.queueEvents.close();
      await orm.close(true);
      unlock();
      log.info('shut down');
    })());
  return { url, services, close };
}

/** Waits for a promise, but not longer than `ms`. */
async function waitAtMost(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
