import { fileURLToPath } from 'node:url';
import proxyAddr from 'proxy-addr';
import { z } from 'zod';
import { NAME_PART, ROLES, type Role } from '@loupe/shared';

const DEFAULT_CATALOG = fileURLToPath(new URL('./catalog/default-models.json', import.meta.url));

const int = (min: number, max: number) =>
  z
    .string()
    .regex(/^[0-9]+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.int().min(min).max(max));

const bool = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');

/**
 * Which proxies' X-Forwarded-For entries name the client (Express's `trust proxy`): `false`, a hop
 * count, or addresses/CIDRs/preset names (`loopback`, `linklocal`, `uniquelocal`). Not `true`,
 * which trusts every entry, so that any client could pick the address the brake counts against.
 */
const TrustProxy = z.string().transform((value, ctx): false | number | string[] => {
  const text = value.trim();
  if (text === 'false') return false;
  if (/^[0-9]+$/.test(text)) return Number(text);
  if (/^true$/i.test(text)) {
    ctx.addIssue({
      code: 'custom',
      message:
        '"true" would trust every X-Forwarded-For entry, so any client could choose its own address; ' +
        'write the number of proxies in front of the server (e.g. 1) or their addresses (e.g. 10.0.0.0/8,loopback)',
    });
    return z.NEVER;
  }
  const list = text.split(',').map((entry) => entry.trim());
  try {
    if (list.includes('')) throw new TypeError('empty entry');
    proxyAddr.compile(list); // the parser Express uses for this setting
    return list;
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: `must be false, a hop count or a comma-separated list of addresses/CIDRs (${(error as Error).message})` });
    return z.NEVER;
  }
});

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

/**
 * The server key (cursor seals): at least 256 bits written as hex (64 or more digits) or base64url
 * (43 or more characters); the text itself is the key. The message never repeats the value.
 */
const Secret = z
  .string()
  .refine(
    (text) => (/^[0-9a-fA-F]+$/.test(text) ? text.length >= 64 : /^[A-Za-z0-9_-]{43,}={0,2}$/.test(text)) && text.length <= 1024,
    'must be at least 32 random bytes written as hex (64 or more digits) or base64url (43 or more characters), e.g. the output of `openssl rand -hex 32`',
  );

/** The default retry schedule of webhook deliveries (contract 5.13): delays after each failure. */
const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,10h';
const DURATION_UNITS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;

/** Comma-separated durations in ms, s, m or h (e.g. `5s,5m,30m`), as milliseconds; at most 50 of them, each at most 7 days. */
const RetrySchedule = z.string().transform((text, ctx): number[] => {
  const delays = text.split(',').map((part) => {
    const match = /^\s*([0-9]+)(ms|s|m|h)\s*$/.exec(part);
    return match ? Number(match[1]) * DURATION_UNITS[match[2] as keyof typeof DURATION_UNITS] : Number.NaN;
  });
  if (delays.length > 50 || delays.some((delay) => !Number.isSafeInteger(delay) || delay > 7 * 86_400_000)) {
    ctx.addIssue({ code: 'custom', message: 'must be comma-separated durations such as 5s,5m,30m,2h (units ms, s, m, h; at most 50, each at most 7 days)' });
    return z.NEVER;
  }
  return delays;
});

/**
 * LOUPE_OIDC_ROLE_MAP: `value=role` pairs, comma-separated (`loupe-admins=admin, annotators=member`).
 * A value is split from its role at the last `=`, so group paths and URNs may hold one.
 */
const RoleMap = z.string().transform((text, ctx): { value: string; role: Role }[] => {
  const pairs = text.split(',').map((part) => part.trim()).filter((part) => part !== '');
  const map: { value: string; role: Role }[] = [];
  for (const pair of pairs) {
    const eq = pair.lastIndexOf('=');
    const value = eq > 0 ? pair.slice(0, eq).trim() : '';
    const role = eq > 0 ? pair.slice(eq + 1).trim() : '';
    if (!value || value.length > 256 || !(ROLES as readonly string[]).includes(role)) {
      ctx.addIssue({ code: 'custom', message: `must be comma-separated value=role pairs with role one of ${ROLES.join(', ')} (e.g. loupe-admins=admin, annotators=member)` });
      return z.NEVER;
    }
    map.push({ value, role: role as Role });
  }
  if (map.length > 1000) {
    ctx.addIssue({ code: 'custom', message: 'may map at most 1000 values' });
    return z.NEVER;
  }
  return map;
});

/** Every setting, read from the environment; names are those of the README's configuration table. */
const Env = z.object({
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: int(0, 65535).default(8000),
  DATABASE_URL: DatabaseUrl.default('sqlite:./data/loupe.db'),
  LOUPE_MODEL_CATALOG: z.string().min(1).default(DEFAULT_CATALOG),
  LOUPE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOUPE_MAX_BODY_BYTES: int(1024, 1024 ** 3).default(32 * 1024 * 1024),
  LOUPE_MAX_BATCH: int(1, 1_000_000).default(10_000),
  LOUPE_MAX_JSON_DEPTH: int(2, 1000).default(64),
  LOUPE_BODY_BUDGET_BYTES: int(1024, 16 * 1024 ** 3).default(256 * 1024 * 1024),
  LOUPE_BODY_WAIT_MS: int(0, 600_000).default(10_000),
  LOUPE_BODY_SHARE_BYTES: int(64 * 1024, 16 * 1024 ** 3).default(64 * 1024 * 1024),
  LOUPE_BODY_MIN_RATE_BYTES_PER_S: int(0, 1024 ** 3).default(64 * 1024),
  LOUPE_BODY_TIMEOUT_MS: int(1_000, 3_600_000).default(120_000),
  LOUPE_HEADERS_TIMEOUT_MS: int(1_000, 600_000).default(10_000),
  LOUPE_MAX_CONNECTIONS: int(1, 1_000_000).default(4_096),
  LOUPE_MAX_CONNECTIONS_PER_ADDRESS: int(1, 1_000_000).default(256),
  LOUPE_MAX_PAYLOAD_BYTES: int(1, 1024 ** 3).default(1024 * 1024),
  LOUPE_MAX_CALL_IDS: int(1, 1_000_000).default(10_000),
  LOUPE_MAX_QUERY_LIMIT: int(1, 1_000_000).default(10_000),
  LOUPE_MAX_RESPONSE_BYTES: int(64 * 1024, 1024 ** 3).default(32 * 1024 * 1024),
  LOUPE_AUTH_FAILURES_PER_MINUTE: int(1, 1_000_000).default(20),
  LOUPE_AGREEMENT_TIMEOUT_MS: int(1, 600_000).default(10_000),
  LOUPE_DB_POOL_SIZE: int(1, 1000).default(10),
  LOUPE_DB_CONNECT_TIMEOUT_MS: int(100, 600_000).default(5_000),
  LOUPE_DB_STATEMENT_TIMEOUT_MS: int(100, 3_600_000).default(30_000),
  LOUPE_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: int(100, 3_600_000).default(30_000),
  LOUPE_SHUTDOWN_TIMEOUT_MS: int(0, 600_000).default(10_000),
  LOUPE_EVENT_STREAMS_PER_KEY: int(1, 100_000).default(20),
  LOUPE_EVENT_STREAMS_PER_PROCESS: int(1, 1_000_000).default(2_000),
  LOUPE_EVENT_STREAM_MAX_LIFE_MS: int(1_000, 86_400_000).default(300_000),
  LOUPE_EVENT_STREAM_RECHECK_MS: int(100, 3_600_000).default(5_000),
  LOUPE_MAX_RULES_PER_QUEUE: int(1, 10_000).default(20),
  LOUPE_MAX_RULES_PER_PROJECT: int(1, 100_000).default(100),
  LOUPE_RULE_PREVIEW_SCAN_LIMIT: int(1, 100_000_000).default(50_000),
  LOUPE_RULE_BACKFILL_CHUNK: int(1, 100_000).default(1_000),
  LOUPE_RULE_BACKFILL_PAUSE_MS: int(0, 600_000).default(10),
  LOUPE_RULE_BACKFILL_POLL_MS: int(10, 3_600_000).default(2_000),
  LOUPE_RULE_BACKFILL_LEASE_MS: int(100, 3_600_000).default(30_000),
  LOUPE_CATALOG_WATCH: bool.default(true),
  LOUPE_TRUST_PROXY: TrustProxy.default(false),
  LOUPE_SECRET: Secret.optional(),
  LOUPE_WEBHOOK_RETRY_SCHEDULE: RetrySchedule.prefault(DEFAULT_RETRY_SCHEDULE),
  LOUPE_WEBHOOK_ALLOW_HTTP: bool.default(false),
  LOUPE_WEBHOOK_ALLOW_PRIVATE: bool.default(false),
  LOUPE_WEBHOOK_TIMEOUT_MS: int(100, 600_000).default(10_000),
  LOUPE_WEBHOOK_CONCURRENCY: int(1, 1_000).default(16),
  LOUPE_WEBHOOK_POLL_MS: int(10, 600_000).default(1_000),
  LOUPE_WEBHOOK_RETENTION_DAYS: int(1, 3_650).default(7),
  LOUPE_PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  LOUPE_COOKIE_SECURE: bool.default(false),
  LOUPE_SESSION_IDLE_HOURS: int(1, 24 * 365).default(72),
  LOUPE_SESSION_MAX_DAYS: int(1, 3_650).default(30),
  LOUPE_PASSWORD_SIGN_IN: bool.default(true),
  LOUPE_OIDC_ISSUER: z.url({ protocol: /^https?$/ }).max(2048).optional(),
  LOUPE_OIDC_CLIENT_ID: z.string().max(1024).optional(),
  LOUPE_OIDC_CLIENT_SECRET: z.string().max(4096).optional(),
  LOUPE_OIDC_ENTITY: z.string().regex(NAME_PART, 'must be an entity name: 1-128 of [A-Za-z0-9_.-] starting with a letter or digit').optional(),
  LOUPE_OIDC_ROLE_CLAIM: z.string().min(1).max(256).default('groups'),
  LOUPE_OIDC_ROLE_MAP: RoleMap.optional(),
  LOUPE_OIDC_DEFAULT_ROLE: z.enum(ROLES).optional(),
  LOUPE_OIDC_TIMEOUT_MS: int(100, 600_000).default(10_000),
});

/** How long the database may take: to connect (or lend a connection), per statement, idle in a transaction (PostgreSQL). */
export type DatabaseTimeouts = { connectMs: number; statementMs?: number; idleInTransactionMs?: number };

export type Config = {
  host: string;
  port: number;
  databaseUrl: string;
  modelCatalogPath: string;
  logLevel: z.infer<typeof Env>['LOUPE_LOG_LEVEL'];
  limits: {
    bodyBytes: number;
    /** Deepest nesting of objects and arrays in a request body. */
    jsonDepth: number;
    /** The estimated heap (domain/json-shape.ts bodyWeight) of all bodies in flight at once. */
    bodyBudget: number;
    /** How long a body waits for room in that budget before 503. */
    bodyWaitMs: number;
    /** The part of that budget one API key, and one client address, may hold at once (their oldest body may grow up to the budget less this). */
    bodyShare: number;
    /** The slowest a body may arrive (bytes per second, judged over windows of a few seconds), and its longest time. */
    bodyMinRate: number;
    bodyTimeoutMs: number;
    batchRecords: number;
    payloadBytes: number;
    callIdsPerAdd: number;
    queryLimit: number;
    /** The most JSON one answer of a query or read may hold, as its rows are stored (see domain/answer-budget.ts). */
    responseBytes: number;
    authFailuresPerMinute: number;
    /** How long one agreement request may take (reads, waiting for a slot, statistics) before 503. */
    agreementTimeoutMs: number;
  };
  dbPoolSize: number;
  dbTimeouts: DatabaseTimeouts;
  shutdownTimeoutMs: number;
  /**
   * Connections: a request head (a fresh connection's first included) must arrive within
   * `headersTimeoutMs`; at most `max` open at once, `perAddress` of them from one client address.
   */
  connections: { headersTimeoutMs: number; max: number; perAddress: number };
  /** Open live-event streams (annotationQueues.events) one API key, and one process in all, may hold. */
  eventStreams: { perKey: number; perProcess: number; maxLifeMs: number; recheckMs: number };
  /** Queue rules (contract 5.10): how many, how far a preview scans, how backfills are worked. */
  rules: {
    perQueue: number;
    perProject: number;
    previewScanLimit: number;
    /** Stored calls one backfill transaction considers, and the pause between two of them. */
    backfillChunk: number;
    backfillPauseMs: number;
    /** How often a server process looks for a backfill to work, and how long its claim on one lasts unrenewed. */
    backfillPollMs: number;
    backfillLeaseMs: number;
  };
  watchCatalog: boolean;
  /** Express's `trust proxy`: false, a hop count, or addresses/CIDRs. */
  trustProxy: false | number | string[];
  /** LOUPE_SECRET; when unset, the server uses the one kept in its database (db/server-secret.ts). */
  secret: string | undefined;
  webhooks: WebhookSettings;
  people: PeopleSettings;
};

/** Sign-in and sessions (contract 5.12). */
export type PeopleSettings = {
  /**
   * LOUPE_PUBLIC_URL without a trailing slash: where invitation links point; its origin is one a
   * cookie-authenticated write may come from (besides the request's own host).
   */
  publicUrl: string | undefined;
  /** Mark the session cookie Secure on every answer (else only on requests that came over HTTPS). */
  cookieSecure: boolean;
  sessionIdleMs: number;
  sessionMaxMs: number;
  passwordSignIn: boolean;
  /** Single sign-on with OpenID Connect; undefined when LOUPE_OIDC_ISSUER and the client are not set. */
  oidc: OidcSettings | undefined;
};

/** Single sign-on (contract 5.12): the provider, this server's client there, where people join and with which role. */
export type OidcSettings = {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The entity a person signing in this way belongs to. */
  entity: string;
  /** The ID token claim (or userinfo claim) whose value, a string or an array of strings, names the role. */
  roleClaim: string;
  /** Claim values and their roles; when several match, the strongest wins (admin, member, annotator, viewer). */
  roleMap: { value: string; role: Role }[];
  /** The role of a person none of whose values is mapped; undefined: such a person is refused. */
  defaultRole: Role | undefined;
  /** The longest one request to the provider (discovery, token) may take. */
  timeoutMs: number;
};

/** How webhook deliveries are made (contract 5.13). */
export type WebhookSettings = {
  /** Delays after each failed attempt, in ms; after the last one a delivery is failed. */
  retrySchedule: number[];
  /** http:// urls accepted (else https:// only). */
  allowHttp: boolean;
  /** Loopback, private, link-local and other non-public addresses accepted (else refused at every attempt). */
  allowPrivate: boolean;
  /** The longest one attempt may take, connection to response head. */
  timeoutMs: number;
  /** Attempts one process makes at once. */
  concurrency: number;
  /** How often a process looks for due deliveries when nothing woke it. */
  pollMs: number;
  /** How long finished deliveries (and events no delivery needs) are kept. */
  retentionDays: number;
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
    ...settingsBeforeOidc(e),
    people: {
      publicUrl: e.LOUPE_PUBLIC_URL?.replace(/\/+$/, ''),
      cookieSecure: e.LOUPE_COOKIE_SECURE,
      sessionIdleMs: e.LOUPE_SESSION_IDLE_HOURS * 3_600_000,
      sessionMaxMs: e.LOUPE_SESSION_MAX_DAYS * 86_400_000,
      passwordSignIn: e.LOUPE_PASSWORD_SIGN_IN,
      oidc: oidcSettings(e, env),
    },
  };
}

/**
 * Single sign-on is on when the provider and the client are all set; some of them (or any other
 * LOUPE_OIDC_* setting) without the rest is a mistake the server refuses to start with.
 */
function oidcSettings(e: z.infer<typeof Env>, env: Record<string, string | undefined>): OidcSettings | undefined {
  const required = ['LOUPE_OIDC_ISSUER', 'LOUPE_OIDC_CLIENT_ID', 'LOUPE_OIDC_CLIENT_SECRET'] as const;
  const given = Object.keys(env).filter((name) => name.startsWith('LOUPE_OIDC_') && env[name] !== undefined && env[name] !== '');
  if (given.length === 0) return undefined;
  const problems: string[] = [];
  const missing = required.filter((name) => !e[name]);
  if (missing.length > 0) {
    problems.push(`single sign-on needs ${required.join(', ')}; ${given.sort().join(', ')} ${given.length === 1 ? 'is' : 'are'} set but ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not`);
  }
  if (!e.LOUPE_OIDC_ENTITY) problems.push('LOUPE_OIDC_ENTITY: single sign-on needs the entity people who sign in this way join');
  if (!e.LOUPE_OIDC_ROLE_MAP?.length && !e.LOUPE_OIDC_DEFAULT_ROLE) {
    problems.push('LOUPE_OIDC_ROLE_MAP, LOUPE_OIDC_DEFAULT_ROLE: single sign-on needs at least one of them, or nobody could be given a role');
  }
  if (problems.length > 0) throw new ConfigError(`invalid configuration:\n  ${problems.join('\n  ')}`);
  return {
    issuer: e.LOUPE_OIDC_ISSUER!,
    clientId: e.LOUPE_OIDC_CLIENT_ID!,
    clientSecret: e.LOUPE_OIDC_CLIENT_SECRET!,
    entity: e.LOUPE_OIDC_ENTITY!,
    roleClaim: e.LOUPE_OIDC_ROLE_CLAIM,
    roleMap: e.LOUPE_OIDC_ROLE_MAP ?? [],
    defaultRole: e.LOUPE_OIDC_DEFAULT_ROLE,
    timeoutMs: e.LOUPE_OIDC_TIMEOUT_MS,
  };
}

function settingsBeforeOidc(e: z.infer<typeof Env>): Omit<Config, 'people'> {
  return {
    host: e.HOST,
    port: e.PORT,
    databaseUrl: e.DATABASE_URL,
    modelCatalogPath: e.LOUPE_MODEL_CATALOG,
    logLevel: e.LOUPE_LOG_LEVEL,
    limits: {
      bodyBytes: e.LOUPE_MAX_BODY_BYTES,
      jsonDepth: e.LOUPE_MAX_JSON_DEPTH,
      bodyBudget: e.LOUPE_BODY_BUDGET_BYTES,
      bodyWaitMs: e.LOUPE_BODY_WAIT_MS,
      bodyShare: e.LOUPE_BODY_SHARE_BYTES,
      bodyMinRate: e.LOUPE_BODY_MIN_RATE_BYTES_PER_S,
      bodyTimeoutMs: e.LOUPE_BODY_TIMEOUT_MS,
      batchRecords: e.LOUPE_MAX_BATCH,
      payloadBytes: e.LOUPE_MAX_PAYLOAD_BYTES,
      callIdsPerAdd: e.LOUPE_MAX_CALL_IDS,
      queryLimit: e.LOUPE_MAX_QUERY_LIMIT,
      responseBytes: e.LOUPE_MAX_RESPONSE_BYTES,
      authFailuresPerMinute: e.LOUPE_AUTH_FAILURES_PER_MINUTE,
      agreementTimeoutMs: e.LOUPE_AGREEMENT_TIMEOUT_MS,
    },
    dbPoolSize: e.LOUPE_DB_POOL_SIZE,
    dbTimeouts: {
      connectMs: e.LOUPE_DB_CONNECT_TIMEOUT_MS,
      statementMs: e.LOUPE_DB_STATEMENT_TIMEOUT_MS,
      idleInTransactionMs: e.LOUPE_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS,
    },
    shutdownTimeoutMs: e.LOUPE_SHUTDOWN_TIMEOUT_MS,
    connections: {
      headersTimeoutMs: e.LOUPE_HEADERS_TIMEOUT_MS,
      max: e.LOUPE_MAX_CONNECTIONS,
      perAddress: e.LOUPE_MAX_CONNECTIONS_PER_ADDRESS,
    },
    eventStreams: {
      perKey: e.LOUPE_EVENT_STREAMS_PER_KEY,
      perProcess: e.LOUPE_EVENT_STREAMS_PER_PROCESS,
      maxLifeMs: e.LOUPE_EVENT_STREAM_MAX_LIFE_MS,
      recheckMs: e.LOUPE_EVENT_STREAM_RECHECK_MS,
    },
    rules: {
      perQueue: e.LOUPE_MAX_RULES_PER_QUEUE,
      perProject: e.LOUPE_MAX_RULES_PER_PROJECT,
      previewScanLimit: e.LOUPE_RULE_PREVIEW_SCAN_LIMIT,
      backfillChunk: e.LOUPE_RULE_BACKFILL_CHUNK,
      backfillPauseMs: e.LOUPE_RULE_BACKFILL_PAUSE_MS,
      backfillPollMs: e.LOUPE_RULE_BACKFILL_POLL_MS,
      backfillLeaseMs: e.LOUPE_RULE_BACKFILL_LEASE_MS,
    },
    watchCatalog: e.LOUPE_CATALOG_WATCH,
    trustProxy: e.LOUPE_TRUST_PROXY,
    secret: e.LOUPE_SECRET,
    webhooks: {
      retrySchedule: e.LOUPE_WEBHOOK_RETRY_SCHEDULE,
      allowHttp: e.LOUPE_WEBHOOK_ALLOW_HTTP,
      allowPrivate: e.LOUPE_WEBHOOK_ALLOW_PRIVATE,
      timeoutMs: e.LOUPE_WEBHOOK_TIMEOUT_MS,
      concurrency: e.LOUPE_WEBHOOK_CONCURRENCY,
      pollMs: e.LOUPE_WEBHOOK_POLL_MS,
      retentionDays: e.LOUPE_WEBHOOK_RETENTION_DAYS,
    },
  };
}
