import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthUser } from '../auth/authenticate.ts';
import type { AuthBrake } from '../auth/brake.ts';
import type { ModelCatalog } from '../catalog/catalog.ts';
import type { Config } from '../config.ts';
import { forkEm, type Em, type Orm } from '../db/orm.ts';
import type { SqlScope } from '../db/sql.ts';
import { admittedUser, refusalOf } from '../http/admission.ts';
import { requestLog, type Logger } from '../log.ts';

/** What every request can reach: long-lived parts built once at start-up. */
export type Services = {
  config: Config;
  orm: Orm;
  log: Logger;
  catalog: ModelCatalog;
  authFailures: AuthBrake;
};

export type Context = {
  services: Services;
  /**
   * The request's own entity manager (its unit of work), forked on first use: the hand-written
   * SQL paths never need one, and a fork is not free (MikroORM builds a unit of work and writes
   * process.env twice).
   */
  em: () => Em;
  /** Hand-written SQL outside any unit of work (authentication, progress, claim). */
  sql: SqlScope;
  requestId: string;
  /** The caller, authenticated by the HTTP layer before the body was read (protected routes). */
  admitted: AuthUser | undefined;
  /** Why the HTTP layer refused the caller before reading its body (typed door only). */
  refused: unknown;
  /** The request's logger (made on first use). */
  log: () => Logger;
  res: ServerResponse;
};

type RequestWithId = IncomingMessage & { id?: string };

/** One context for both doors (`/trpc` and REST), so behaviour cannot differ between them. */
export function contextFactory(services: Services) {
  return ({ req, res }: { req: IncomingMessage; res: ServerResponse }): Context => {
    const request = req as RequestWithId;
    let em: Em | undefined;
    return {
      services,
      em: () => (em ??= forkEm(services.orm)),
      sql: services.orm.em as Em,
      requestId: request.id ?? '',
      admitted: admittedUser(req),
      refused: refusalOf(req),
      log: () => requestLog(req) ?? services.log,
      res,
    };
  };
}
