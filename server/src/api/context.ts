import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthUser } from '../domain/auth-user.ts';
import { unitOfWork, type Em } from '../db/orm.ts';
import type { SqlScope } from '../db/sql.ts';
import { admittedUser, refusalOf } from './request-admission.ts';
import type { Services } from './services.ts';
import { answerRoom } from './answer-room.ts';
import type { PageLimits } from '../domain/paging.ts';
import { requestLog, type Logger } from '../log.ts';

// A job that loads or changes entities takes `unitOfWork()`; a job written only in SQL takes `db`.
export type Context = {
  services: Services;
  /**
   * The request's own MikroORM entity manager (its unit of work), forked on first use: a fork is
   * not free (MikroORM builds a unit of work and writes process.env twice).
   */
  unitOfWork: () => Em;
  /** The database for hand-written SQL (db/sql.ts; `sqlTransaction` to write atomically), outside any unit of work. */
  db: SqlScope;
  requestId: string;
  /** The caller, authenticated by the HTTP layer before the body was read (protected routes). */
  admitted: AuthUser | undefined;
  /** Why the HTTP layer refused the caller before reading its body (typed door only). */
  refused: unknown;
  /** The request's logger (made on first use). */
  log: () => Logger;
  /** What the server allows one page of an answer (rows, bytes, cursor seal, heap). */
  pageLimits: PageLimits;
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
      unitOfWork: () => (em ??= unitOfWork(services.orm)),
      db: services.orm.em,
      requestId: request.id ?? '',
      admitted: admittedUser(req),
      refused: refusalOf(req),
      log: () => requestLog(req) ?? services.log,
      pageLimits: {
        queryLimit: services.config.limits.queryLimit,
        responseBytes: services.config.limits.responseBytes,
        seal: services.cursorSeal,
        room: answerRoom(services, req, res),
      },
      res,
    };
  };
}
