import { unitOfWork, openDatabase, sqlRows, sqlRun, type Em } from '@loupe/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase, postgresAvailable, type TestDatabase } from '../harness/databases.ts';

// Each dialect has its own migrations (server/src/db/migrations/{sqlite,postgresql}), so nothing
// but this test keeps them describing the same schema. Both databases are migrated with the
// project's own migrations, each catalog is read back and reduced to one line per fact (column,
// primary key, index), and the two sets of lines must be equal.

const NAME = 'SQLite and PostgreSQL migrations describe the same schema';

/** MikroORM's bookkeeping of applied migrations, not part of the schema. */
const BOOKKEEPING = 'mikro_orm_migrations';

/** Tables one dialect has by design, with the reason. */
const DIALECT_ONLY_TABLES: Record<string, string> = {
  // SQLite serves one process, so the failed-authentication brake counts in memory there
  // (Migration0005AuthFailures is empty on SQLite).
  auth_failures: 'postgresql',
};

/** Loose form of a partial index's predicate: no quotes, parentheses, case or spacing differences. */
function predicate(sql: string | null | undefined): string {
  if (!sql) return '';
  return ` where ${sql.replace(/["'`()]/g, '').replace(/\s+/g, ' ').trim().toLowerCase()}`;
}

/**
 * A SQLite declared type as a logical kind. Dates are `datetime` (the ORM stores a Date there its
 * own way; PostgreSQL's timestamptz holds the same instant), JSON is `json` text (PostgreSQL's
 * jsonb holds the same documents). SQLite never enforces a declared length, so one is shown as
 * unenforced: it can only match PostgreSQL if neither side limits the length.
 */
function sqliteKind(declared: string): string {
  const type = declared.trim().toLowerCase();
  const length = /\((\d+)\)/.exec(type)?.[1];
  if (/char|clob|text/.test(type)) return length ? `text(${length}, not enforced)` : 'text';
  if (/^(integer|int|bigint|smallint)$/.test(type)) return 'integer';
  if (/real|floa|doub|numeric|decimal/.test(type)) return 'number';
  if (type === 'boolean') return 'boolean';
  if (/^(datetime|timestamp)/.test(type)) return 'timestamp';
  if (type === 'json') return 'json';
  if (type === 'blob') return 'bytes';
  return `unknown(${type})`;
}

/** A PostgreSQL column type (information_schema's data_type) as a logical kind; see sqliteKind. */
function postgresKind(dataType: string, maxLength: number | null): string {
  switch (dataType) {
    case 'text':
      return 'text';
    case 'character varying':
      return maxLength === null ? 'text' : `text(at most ${maxLength})`;
    case 'character':
      return `text(padded to ${maxLength})`;
    case 'integer':
    case 'bigint':
    case 'smallint':
      return 'integer';
    case 'real':
    case 'double precision':
    case 'numeric':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'timestamp with time zone':
    case 'timestamp without time zone':
      return 'timestamp';
    case 'json':
    case 'jsonb':
      return 'json';
    case 'bytea':
      return 'bytes';
    default:
      return `unknown(${dataType})`;
  }
}

type Index = { table: string; name: string; columns: string[]; unique: boolean; primary: boolean; constraint: boolean; where: string };

/**
 * One line per fact. Indexes made by `create index` are named by their own name; those behind a
 * unique constraint are named by their columns, since each dialect names them its own way; the
 * primary key's index is the primary-key line.
 */
function indexLines(indexes: Index[]): string[] {
  return indexes
    .filter((index) => !index.primary)
    .map((index) => {
      const what = index.constraint ? 'unique constraint' : `${index.unique ? 'unique ' : ''}index ${index.name}`;
      return `${index.table} ${what} (${index.columns.join(', ')})${index.where}`;
    });
}

async function sqliteSchema(em: Em): Promise<string[]> {
  const lines: string[] = [];
  const tables = await sqlRows<{ name: string }>(
    em,
    `select name from pragma_table_list where schema = 'main' and type = 'table' and name not like 'sqlite_%' and name <> '${BOOKKEEPING}'`,
  );
  const indexes: Index[] = [];
  for (const { name: table } of tables) {
    const columns = await sqlRows<{ name: string; type: string; notnull: number; pk: number }>(em, `select name, type, "notnull", pk from pragma_table_info('${table}')`);
    for (const column of columns) {
      // A SQLite primary key that is not an INTEGER one still takes NULL unless declared not
      // null (a documented SQLite quirk), but every row is written by the ORM with its key, so
      // the key's columns count as not null, as PostgreSQL makes them.
      const nullable = column.notnull === 0 && column.pk === 0;
      lines.push(`${table}.${column.name}: ${sqliteKind(column.type)}${nullable ? ' null' : ' not null'}`);
    }
    const key = columns.filter((column) => column.pk > 0).sort((a, b) => a.pk - b.pk);
    if (key.length > 0) lines.push(`${table} primary key (${key.map((column) => column.name).join(', ')})`);
    const list = await sqlRows<{ name: string; unique: number; origin: string; partial: number }>(em, `select name, "unique", origin, partial from pragma_index_list('${table}')`);
    for (const index of list) {
      const columnsOf = await sqlRows<{ name: string }>(em, `select name from pragma_index_info('${index.name}') order by seqno`);
      const [definition] = await sqlRows<{ sql: string | null }>(em, `select sql from sqlite_master where type = 'index' and name = '${index.name}'`);
      indexes.push({
        table,
        name: index.name,
        columns: columnsOf.map((column) => column.name),
        unique: index.unique === 1,
        primary: index.origin === 'pk',
        constraint: index.origin === 'u',
        where: index.partial === 1 ? predicate(/\bwhere\b([\s\S]*)$/i.exec(definition?.sql ?? '')?.[1]) : '',
      });
    }
  }
  return [...lines, ...indexLines(indexes)];
}

async function postgresSchema(em: Em): Promise<string[]> {
  const lines: string[] = [];
  const columns = await sqlRows<{ table_name: string; column_name: string; data_type: string; character_maximum_length: number | null; is_nullable: string }>(
    em,
    `select c.table_name, c.column_name, c.data_type, c.character_maximum_length, c.is_nullable
       from information_schema.columns c
       join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
      where c.table_schema = current_schema() and t.table_type = 'BASE TABLE' and c.table_name <> '${BOOKKEEPING}'`,
  );
  for (const column of columns) {
    const nullable = column.is_nullable === 'YES';
    lines.push(`${column.table_name}.${column.column_name}: ${postgresKind(column.data_type, column.character_maximum_length)}${nullable ? ' null' : ' not null'}`);
  }
  const indexes = await sqlRows<Index>(
    em,
    `select t.relname as "table", i.relname as name, x.indisunique as "unique", x.indisprimary as "primary",
            exists (select 1 from pg_constraint k where k.conindid = x.indexrelid and k.contype = 'u') as "constraint",
            coalesce(pg_get_expr(x.indpred, x.indrelid), '') as "where",
            array(select a.attname::text from unnest(x.indkey::int2[]) with ordinality as k(attnum, n)
                    join pg_attribute a on a.attrelid = x.indrelid and a.attnum = k.attnum order by k.n) as columns
       from pg_index x
       join pg_class i on i.oid = x.indexrelid
       join pg_class t on t.oid = x.indrelid
      where t.relnamespace = current_schema()::regnamespace and t.relname <> '${BOOKKEEPING}'`,
  );
  for (const index of indexes) {
    if (index.primary) lines.push(`${index.table} primary key (${index.columns.join(', ')})`);
    index.where = predicate(index.where);
  }
  return [...lines, ...indexLines(indexes)];
}

/** Drops the lines (each starts with its table's name) of tables one dialect has by design. */
function shared(lines: string[], dialect: string): string[] {
  return lines.filter((line) => DIALECT_ONLY_TABLES[/^\w+/.exec(line)![0]] !== dialect).sort();
}

(postgresAvailable ? describe : describe.skip)(postgresAvailable ? NAME : `${NAME} — SKIPPED: TEST_DATABASE_URL is unset`, () => {
  const databases: TestDatabase[] = [];
  const schemas: Record<'sqlite' | 'postgresql', string[]> = { sqlite: [], postgresql: [] };

  beforeAll(async () => {
    for (const dialect of ['sqlite', 'postgresql'] as const) {
      const database = await freshDatabase(dialect);
      databases.push(database);
      const orm = await openDatabase(database.url, 1);
      try {
        const em = unitOfWork(orm);
        schemas[dialect] = dialect === 'sqlite' ? await sqliteSchema(em) : await postgresSchema(em);
      } finally {
        await orm.close(true);
      }
    }
  });
  afterAll(async () => {
    for (const database of databases) await database.drop();
  });

  it('reads every table, column and index of both catalogs', () => {
    // Guards the comparison itself: a catalog query that found nothing would make both sides equal.
    for (const lines of Object.values(schemas)) {
      expect(lines).toContain('api_keys primary key (id)');
      expect(lines).toContain('api_keys unique constraint (key_hash)');
      expect(lines).toContain('annotation_queue_items unique index annotation_queue_items_call_uq (queue_id, call_id) where deleted_at is null');
      expect(lines).toContain('calls.inputs: json null');
      expect(lines).toContain('calls.started_at: timestamp not null');
    }
    expect(schemas.postgresql).toContain('auth_failures primary key (client)');
  });

  it('both dialects have the same tables, column kinds and lengths, nullability, primary keys and indexes', () => {
    const sqlite = shared(schemas.sqlite, 'sqlite');
    const postgresql = shared(schemas.postgresql, 'postgresql');
    const drift = {
      onlyOnSqlite: sqlite.filter((line) => !postgresql.includes(line)),
      onlyOnPostgresql: postgresql.filter((line) => !sqlite.includes(line)),
    };
    expect(drift, 'schema drift between the SQLite and PostgreSQL migrations').toEqual({ onlyOnSqlite: [], onlyOnPostgresql: [] });
  });

  it('Migration0006UnlimitedText keeps the rows of a PostgreSQL database made before it, and lifts the limits', async () => {
    const database = await freshDatabase('postgresql');
    databases.push(database);
    const orm = await openDatabase(database.url, 1, { migrateNow: false });
    try {
      const em = unitOfWork(orm);
      await orm.migrator.up({ to: 'Migration0005AuthFailures' });
      const hash = 'a'.repeat(64);
      await sqlRun(em, `insert into users values ('u1', 'alice', now())`);
      await sqlRun(em, `insert into api_keys values ('k1', 'u1', ?, now(), null)`, [hash]);
      await sqlRun(em, `insert into entities values ('acme', now())`);
      await sqlRun(em, `insert into memberships values ('u1', 'acme', 'member', now())`);
      await sqlRun(em, `insert into projects values ('acme/p', 'acme', 'p', now())`);
      await sqlRun(em, `insert into calls (project_id, id, trace_id, op_name, started_at, request_hash, created_at, created_by) values ('acme/p', 'c1', 't1', 'chat', now(), ?, now(), 'u1')`, [hash]);
      const before = await sqlRows(em, `select k.key_hash, u.username, m.role, p.name, c.op_name, c.request_hash from api_keys k join users u on u.id = k.user_id join memberships m on m.user_id = u.id join projects p on p.entity = m.entity join calls c on c.project_id = p.id`);
      expect(before).toHaveLength(1);

      await orm.migrator.up();
      const after = await sqlRows(em, `select k.key_hash, u.username, m.role, p.name, c.op_name, c.request_hash from api_keys k join users u on u.id = k.user_id join memberships m on m.user_id = u.id join projects p on p.entity = m.entity join calls c on c.project_id = p.id`);
      expect(after).toEqual(before);
      expect(after[0]).toMatchObject({ key_hash: hash, username: 'alice', role: 'member', op_name: 'chat' });
      // A key hash is found by equality after the change of type, through its unique index.
      expect(await sqlRows(em, `select id from api_keys where key_hash = ?`, [hash])).toEqual([{ id: 'k1' }]);
      // No length is enforced any more (SQLite never enforced one): the API's validation is the limit.
      await sqlRun(em, `update users set username = ? where id = 'u1'`, ['b'.repeat(200)]);
      expect(await sqlRows(em, `select length(username)::int as n from users`)).toEqual([{ n: 200 }]);
    } finally {
      await orm.close(true);
    }
  });
});
