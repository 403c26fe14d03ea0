import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { DatabaseTimeouts } from './db/orm.ts';

const DEFAULT_CATALOG = fileURLToPath(new URL('./catalog/default-models.json', import.meta.url));

const int = (min: number, max: number) =>
  z
    .string()
    .regex(/^[0-9]+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.int().min(min).max(max));

const bool = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');

// The messages never repeat the value: it may hold a password.
const DatabaseUrl = z
  .string()
  .refine(
    (url) => /^sqlite:.+/.test(url) || /^postgres(ql)?:\/\/.+/.test(url),
    'must be sqlite:<path> or postgres://... / postgresql://...',
  )
  .refine((url) => url.startsWith('sqlite:') || URL.canParse(url), 'is not a valid URL (percent-encode special characters of the password: / as %2F, @ as %40)')
  .refine(
    (url) => url.startsWith('sqlite:') || !URL.canParse(url) || !/[@/]/.test(new URL(url).pathname.slice(1)),
    'has "@" or "/" after the host: percent-encode them in the password (%40, %2F)',
  );

/** Every setting, read from the environment; names are those of the README's configuration table. */
const Env = z.object({
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: int(0, 65535).default(8000),
  DATABASE_URL: DatabaseUrl.default('sqlite:./data/loupe.db'),
  LOUPE_MODEL_CATALOG: z.string().min(1).default(DEFAULT_CATALOG),
  LOUPE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOUPE_MAX_BODY_BYTES: int(1024, 1024 ** 3).default(32 * 1024 * 1024),
  LOUPE_MAX_BATCH: int(1, 1_000_000).default(10_000),
  LOUPE_MAX_PAYLOAD_BYTES: int(1, 1024 ** 3).default(1024 * 1024),
  LOUPE_MAX_CALL_IDS: int(1, 1_000_000).default(10_000),
  LOUPE_MAX_QUERY_LIMIT: int(1, 1_000_000).default(10_000),
  LOUPE_AUTH_FAILURES_PER_MINUTE: int(1, 1_000_000).default(20),
  LOUPE_DB_POOL_SIZE: int(1, 1000).default(10),
  LOUPE_DB_CONNECT_TIMEOUT_MS: int(100, 600_000).default(5_000),
  LOUPE_DB_STATEMENT_TIMEOUT_MS: int(100, 3_600_000).default(30_000),
  LOUPE_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: int(100, 3_600_000).default(30_000),
  LOUPE_SHUTDOWN_TIMEOUT_MS: int(0, 600_000).default(10_000),
  LOUPE_CATALOG_WATCH: bool.default(true),
  LOUPE_TRUST_PROXY: bool.default(false),
});

export type Config = {
  host: string;
  port: number;
  databaseUrl: string;
  modelCatalogPath: string;
  logLevel: z.infer<typeof Env>['LOUPE_LOG_LEVEL'];
  limits: {
    bodyBytes: number;
    batchRecords: number;
    payloadBytes: number;
    callIdsPerAdd: number;
    queryLimit: number;
    authFailuresPerMinute: number;
  };
  dbPoolSize: number;
  dbTimeouts: DatabaseTimeouts;
  shutdownTimeoutMs: number;
  watchCatalog: boolean;
  trustProxy: boolean;
};

export class ConfigError extends Error {}

/** Validates the environment; a bad value fails with one line per variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = Env.safeParse(Object.fromEntries(Object.entries(env).filter(([, value]) => value !== '')));
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const e = parsed.data;
  return {
    host: e.HOST,
    port: e.PORT,
    databaseUrl: e.DATABASE_URL,
    modelCatalogPath: e.LOUPE_MODEL_CATALOG,
    logLevel: e.LOUPE_LOG_LEVEL,
    limits: {
      bodyBytes: e.LOUPE_MAX_BODY_BYTES,
      batchRecords: e.LOUPE_MAX_BATCH,
      payloadBytes: e.LOUPE_MAX_PAYLOAD_BYTES,
      callIdsPerAdd: e.LOUPE_MAX_CALL_IDS,
      queryLimit: e.LOUPE_MAX_QUERY_LIMIT,
      authFailuresPerMinute: e.LOUPE_AUTH_FAILURES_PER_MINUTE,
    },
    dbPoolSize: e.LOUPE_DB_POOL_SIZE,
    dbTimeouts: {
      connectMs: e.LOUPE_DB_CONNECT_TIMEOUT_MS,
      statementMs: e.LOUPE_DB_STATEMENT_TIMEOUT_MS,
      idleInTransactionMs: e.LOUPE_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS,
    },
    shutdownTimeoutMs: e.LOUPE_SHUTDOWN_TIMEOUT_MS,
    watchCatalog: e.LOUPE_CATALOG_WATCH,
    trustProxy: e.LOUPE_TRUST_PROXY,
  };
}
