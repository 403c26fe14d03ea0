import type {
  CompiledQuery,
  DatabaseConnection,
  DatabaseIntrospector,
  Dialect,
  DialectAdapter,
  Driver,
  Kysely,
  QueryCompiler,
  QueryResult,
  TransactionSettings,
} from 'kysely';

// MikroORM runs its transactions on Kysely's controlled transactions, which give their connection
// back only when commit or rollback succeeds: a `begin` that fails (SQLite busy past its timeout,
// a PostgreSQL connection lost or timed out) or a rollback that fails keeps the connection forever
// (kysely-org/kysely#1990). On SQLite that is the one connection, and the server hangs; on
// PostgreSQL the pool shrinks by one each time until nothing is left. The driver below keeps
// every begin and rollback from throwing, so that the connection always reaches the release:
// a failed begin is reported by the transaction's first statement (or its commit), and the
// rollback that follows has nothing to undo; a failed rollback is dropped (the failure that
// caused it is what the caller gets, and a PostgreSQL connection that failed is not taken back
// by the pool).

type Options = Parameters<DatabaseConnection['executeQuery']>[1];

/** A connection that refuses every statement while its transaction's begin has failed. */
class GuardedConnection implements DatabaseConnection {
  /** Why the current transaction's begin failed; undefined when it did not. */
  failedBegin: { error: unknown } | undefined;
  readonly inner: DatabaseConnection;
  readonly cancelQuery?: DatabaseConnection['cancelQuery'];
  readonly killSession?: DatabaseConnection['killSession'];
  readonly collectSessionInfo?: DatabaseConnection['collectSessionInfo'];

  constructor(inner: DatabaseConnection) {
    this.inner = inner;
    // Only what the wrapped connection offers: Kysely looks at which of these exist.
    if (inner.cancelQuery) this.cancelQuery = (provider) => inner.cancelQuery!(provider);
    if (inner.killSession) this.killSession = (provider) => inner.killSession!(provider);
    if (inner.collectSessionInfo) this.collectSessionInfo = () => inner.collectSessionInfo!();
  }

  executeQuery<R>(query: CompiledQuery, options?: Options): Promise<QueryResult<R>> {
    if (this.failedBegin) return Promise.reject(this.failedBegin.error);
    return this.inner.executeQuery<R>(query, options);
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize: number, options?: Options): AsyncIterableIterator<QueryResult<R>> {
    if (this.failedBegin) throw this.failedBegin.error;
    yield* this.inner.streamQuery<R>(query, chunkSize, options);
  }
}

class TransactionSafeDriver implements Driver {
  readonly #inner: Driver;
  readonly #guarded = new WeakMap<DatabaseConnection, GuardedConnection>();

  constructor(inner: Driver) {
    this.#inner = inner;
  }

  init(options?: Parameters<Driver['init']>[0]): Promise<void> {
    return this.#inner.init(options);
  }

  async acquireConnection(options?: Parameters<Driver['acquireConnection']>[0]): Promise<DatabaseConnection> {
    const inner = await this.#inner.acquireConnection(options);
    let guarded = this.#guarded.get(inner);
    if (!guarded) this.#guarded.set(inner, (guarded = new GuardedConnection(inner)));
    return guarded;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const guarded = connection as GuardedConnection;
    try {
      await this.#inner.beginTransaction(guarded.inner, settings);
    } catch (error) {
      guarded.failedBegin = { error };
    }
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const guarded = connection as GuardedConnection;
    if (guarded.failedBegin) throw guarded.failedBegin.error;
    await this.#inner.commitTransaction(guarded.inner);
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const guarded = connection as GuardedConnection;
    if (guarded.failedBegin) {
      guarded.failedBegin = undefined;
      return;
    }
    await this.#inner.rollbackTransaction(guarded.inner).catch(() => undefined);
  }

  savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.#inner.savepoint!((connection as GuardedConnection).inner, name, compile);
  }

  rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.#inner.rollbackToSavepoint!((connection as GuardedConnection).inner, name, compile);
  }

  releaseSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.#inner.releaseSavepoint!((connection as GuardedConnection).inner, name, compile);
  }

  releaseConnection(connection: DatabaseConnection, options?: Parameters<Driver['releaseConnection']>[1]): Promise<void> {
    const guarded = connection as GuardedConnection;
    guarded.failedBegin = undefined;
    return this.#inner.releaseConnection(guarded.inner, options);
  }

  destroy(options?: Parameters<Driver['destroy']>[0]): Promise<void> {
    return this.#inner.destroy(options);
  }
}

/** The same dialect, its driver made safe for controlled transactions. */
export function transactionSafe<D extends Dialect>(dialect: D): Dialect {
  return {
    createDriver: () => new TransactionSafeDriver(dialect.createDriver()),
    createQueryCompiler: (): QueryCompiler => dialect.createQueryCompiler(),
    createAdapter: (): DialectAdapter => dialect.createAdapter(),
    createIntrospector: (db: Kysely<any>): DatabaseIntrospector => dialect.createIntrospector(db),
  };
}

export { TransactionSafeDriver };
