import type { Orm } from '../db/orm.ts';
import type { Logger } from '../log.ts';
import { MemoryFailureCounts } from './brake-memory.ts';
import { PostgresFailureCounts } from './brake-postgres.ts';
import type { FailureCounts } from './failure-counts.ts';

export type BrakeOptions = { limit: number; windowMs?: number };

/**
 * The failed-authentication brake. It is consulted only once credentials were sent and found
 * invalid, so a valid key is never refused by it, whoever shares the client's address (a proxy, a
 * NAT, the loopback). Keys hold 256 random bits: the brake does not stop guessing (nothing needs
 * to), it makes a client that keeps sending bad credentials wait.
 */
export class AuthBrake {
  readonly #counts: FailureCounts;
  readonly #limit: number;
  readonly #log: Logger;

  constructor(counts: FailureCounts, limit: number, log: Logger) {
    this.#counts = counts;
    this.#limit = limit;
    this.#log = log;
  }

  /**
   * Counts a failed authentication; returns the seconds the client must wait (answer 429 with
   * Retry-After) once it is over the limit, else 0 (answer 401). Never throws: when the count
   * cannot be kept (database error), the brake opens and the caller answers 401.
   */
  async recordFailure(client: string): Promise<number> {
    try {
      const { failures, secondsLeft } = await this.#counts.add(client);
      return failures > this.#limit ? Math.max(1, secondsLeft) : 0;
    } catch (error) {
      this.#log.warn({ err: error }, 'failed-authentication brake: could not count a failure; not braking');
      return 0;
    }
  }

  current(client: string): Promise<number> {
    return this.#counts.current(client);
  }

  /**
   * Whether a client is over the limit already, to refuse a try before it costs anything (a
   * password hash). When the count cannot be read, the brake opens (false).
   */
  async isBraked(client: string): Promise<boolean> {
    try {
      return (await this.#counts.current(client)) >= this.#limit;
    } catch (error) {
      this.#log.warn({ err: error }, 'failed-authentication brake: could not read a count; not braking');
      return false;
    }
  }
}

/**
 * SQLite serves one process, so its counts live in that process's memory (bounded). PostgreSQL
 * may serve several processes, which must share one count or N of them would allow N × the limit:
 * there the counts are rows of the database.
 */
export function createAuthBrake(orm: Orm, dialect: 'sqlite' | 'postgresql', options: BrakeOptions, log: Logger): AuthBrake {
  const windowMs = options.windowMs ?? 60_000;
  const counts = dialect === 'postgresql' ? new PostgresFailureCounts(orm.em, windowMs) : new MemoryFailureCounts({ windowMs });
  return new AuthBrake(counts, options.limit, log);
}
