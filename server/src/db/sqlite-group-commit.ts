import type { Kysely } from 'kysely';
import { BEGIN, type LoupeSqliteDatabase } from './sqlite-dialect.ts';

// Group commit for SQLite's one connection. Its transactions run one after another anyway; what
// each costs beyond its statements is the `begin immediate` and above all the commit (the WAL
// append: ~95 µs, more than every other statement of a progress update together). The
// transactions asked for within one turn of the event loop therefore run in one database
// transaction, each inside its own savepoint, and are answered after its one commit:
//
// - atomic each: a transaction whose work fails is rolled back to its savepoint, and only its
//   caller gets the error; the others still commit;
// - isolated each: they run one at a time on the connection, as before;
// - durable when answered: no caller hears of success before the commit returned; a failed commit
//   (or anything that ends the database transaction early, such as SQLITE_FULL) fails every
//   transaction of the group, none of which has been answered yet.
//
// A transaction alone in its group runs without a savepoint, exactly as a plain transaction.

/**
 * A group takes no more members once it holds this many or its work has run this long: its first
 * members' answers wait for the last ones' work (a progress update's is ~0.2 ms, a batch of 1,000
 * feedback records' tens of ms).
 */
const MAX_GROUP = 32;
const GROUP_WINDOW_MS = 5;
const SAVEPOINT = 'loupe_group_member';

type Member = { kysely: Kysely<any>; work: (connection: Kysely<any>) => Promise<unknown>; resolve: (value: unknown) => void; reject: (error: unknown) => void };
type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export class SqliteGroupCommit {
  readonly #sqlite: LoupeSqliteDatabase;
  #pending: Member[] = [];
  #scheduled = false;

  constructor(sqlite: LoupeSqliteDatabase) {
    this.#sqlite = sqlite;
  }

  /**
   * Runs `work` in a transaction of the next group, handing it `kysely` on the held connection;
   * resolves once that group has committed.
   */
  run<T>(kysely: Kysely<any>, work: (connection: Kysely<any>) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ kysely, work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#scheduled) this.#schedule();
    });
  }

  async #drain(): Promise<void> {
    if (!this.#pending.length) return; // an earlier drain took them
    let group: Member[] | undefined;
    try {
      // Kysely's lock on the connection keeps every other statement out until the group ends.
      await this.#pending[0]!.kysely.connection().execute(async (connection) => {
        this.#scheduled = false;
        const taken: Member[] = (group = []);
        // #commit answers the failures of work and of commit itself; anything else that throws (a
        // savepoint refused) fails the group, rolled back here, while the connection is held.
        const outcomes = await this.#commit(taken, connection).catch((error: unknown) => this.#abandon(taken, error));
        if (this.#pending.length && !this.#scheduled) this.#schedule();
        for (const [i, member] of taken.entries()) {
          const outcome = outcomes[i]!;
          if (outcome.ok) member.resolve(outcome.value);
          else member.reject(outcome.error);
        }
      });
    } catch (error) {
      // The connection could not be had (the database is closing): nothing of the group ran.
      if (group) return; // the group was answered
      this.#scheduled = false;
      for (const member of this.#pending.splice(0)) member.reject(error);
    }
  }

  #schedule(): void {
    this.#scheduled = true;
    // After this turn's I/O callbacks: every request read in this turn joins the group.
    setImmediate(() => void this.#drain());
  }

  /**
   * Takes members from the pending ones into `group` while it is short, in count and in time (the
   * first members' answers wait for the last ones' work), runs their work in one transaction and
   * says how each ended.
   */
  async #commit(group: Member[], connection: Kysely<any>): Promise<Outcome[]> {
    const sqlite = this.#sqlite;
    const alone = this.#pending.length === 1;
    const started = performance.now();
    const next = () => (group.length < MAX_GROUP && performance.now() - started < GROUP_WINDOW_MS ? this.#pending.shift() : undefined);
    try {
      sqlite.prepare(BEGIN).run([]);
    } catch (error) {
      group.push(this.#pending.shift()!);
      return [{ ok: false, error }];
    }
    const outcomes: Outcome[] = [];
    for (let member: Member | undefined = this.#pending.shift()!; member; member = alone ? undefined : next()) {
      group.push(member);
      if (!alone) sqlite.prepare(`savepoint ${SAVEPOINT}`).run([]);
      let outcome: Outcome;
      try {
        outcome = { ok: true, value: await member.work(connection) };
      } catch (error) {
        outcome = { ok: false, error };
      }
      outcomes.push(outcome);
      // SQLite ends a transaction itself on some errors (a full disk, an I/O error), and with it
      // the work of the members before.
      if (!sqlite.inTransaction()) return this.#abandon(group, outcome.ok ? lostTransaction() : outcome.error);
      try {
        if (alone && !outcome.ok) sqlite.prepare('rollback').run([]);
        if (alone) continue;
        if (!outcome.ok) sqlite.prepare(`rollback to ${SAVEPOINT}`).run([]);
        sqlite.prepare(`release ${SAVEPOINT}`).run([]);
      } catch (error) {
        return this.#abandon(group, error);
      }
    }
    if (!sqlite.inTransaction()) return outcomes; // a member alone that failed, rolled back
    try {
      sqlite.prepare('commit').run([]);
    } catch (error) {
      return this.#abandon(group, error);
    }
    return outcomes;
  }

  /** Rolls back what is left of the group's transaction; every member fails with `error`. */
  #abandon(group: readonly Member[], error: unknown): Outcome[] {
    if (this.#sqlite.inTransaction()) {
      try {
        this.#sqlite.prepare('rollback').run([]);
      } catch {
        // The connection is left as SQLite left it; the error that caused this is reported.
      }
    }
    return group.map(() => ({ ok: false, error }));
  }
}

function lostTransaction(): Error {
  return new Error('The database ended the transaction before its commit.');
}
