import pg from 'pg';

/** The message of pg's error when `query_timeout` passes without an answer from the server. */
export const QUERY_READ_TIMEOUT = 'Query read timeout';

/**
 * The pool's connection class. When a statement gets no answer within the client-side limit
 * (`query_timeout`: the server is paused or the network drops packets), pg fails the query but
 * keeps the connection, with that statement still pending on it: every later query on it would
 * queue behind, and an abandoned transaction could stay open on the server. This connection ends
 * itself instead (pg's `end()` destroys the socket while a query is pending), and the pool, which
 * does not take back a client that is ending, opens a fresh one when it needs one.
 */
export class SelfClosingClient extends pg.Client {
  override query(...args: any[]): any {
    const result: unknown = (super.query as (...a: unknown[]) => unknown)(...args);
    if (result instanceof Promise) {
      result.catch((error: unknown) => {
        if (error instanceof Error && error.message === QUERY_READ_TIMEOUT) this.end().catch(() => undefined);
      });
    }
    return result;
  }
}
