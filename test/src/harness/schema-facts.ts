import { sql, sqlRows, type Em, type Orm } from '@loupe/server';

// A database schema reduced to one line per fact (a column with its kind and nullability, a
// primary key, an index), so that two descriptions of one schema can be compared line by line:
// the catalogs of the two databases (db/schema-parity.test.ts) and each catalog against the
// entities (db/entity-schema.test.ts).

/** MikroORM's bookkeeping of applied migrations, not part of the schema. */
const BOOKKEEPING = 'mikro_orm_migrations';

/** Tables one dialect has by design, with the reason. */
export const DIALECT_ONLY_TABLES: Record<string, string> = {
  // SQLite serves one process, so the failed-authentication brake counts in memory there
  // (Migration0005AuthFailures is empty on SQLite).
  auth_failures: 'postgresql',
};

/**
 * Full-text search of calls (CallFilter.text, Migration0011CallText) is each dialect's own by
 * design, and the entities cannot declare either form: on SQLite an FTS5 virtual table `calls_text`
 * (its shadow tables `calls_text_*`) and the trigger `calls_text_insert`, which sqliteSchema does
 * not read (pragma_table_list types them `virtual` and `shadow`, not `table`); on PostgreSQL the
 * function `calls_text_vector` (functions are no lines here), the column `text_vector` it makes and
 * a GIN index on that, listed here and left out of the catalog's lines.
 * test/src/db/entity-schema.test.ts checks that each dialect has its own.
 */
export const DIALECT_ONLY_INDEXES: Record<string, string> = {
  calls_text_idx: 'postgresql',
};

/**
 * Columns one dialect has by design: PostgreSQL stores each call's text-search vector (generated
 * from its inputs and output, Migration0013CallFilterIndexes), which SQLite keeps in its FTS5 table.
 */
export const DIALECT_ONLY_COLUMNS: Record<string, string> = {
  'calls.text_vector': 'postgresql',
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

export type Index = { table: string; name: string; columns: string[]; unique: boolean; primary: boolean; constraint: boolean; where: string };

/**
 * One line per fact. Indexes made by `create index` are named by their own name; those behind a
 * unique constraint are named by their columns, since each dialect names them its own way; the
 * primary key's index is the primary-key line.
 */
function indexLines(indexes: Index[]): string[] {
  return indexes
    .filter((index) => !index.primary && !(index.name in DIALECT_ONLY_INDEXES))
    .map((index) => {
      const what = index.constraint ? 'unique constraint' : `${index.unique ? 'unique ' : ''}index ${index.name}`;
      return `${index.table} ${what} (${index.columns.join(', ')})${index.where}`;
    });
}

export async function sqliteSchema(em: Em): Promise<string[]> {
  const lines: string[] = [];
  const tables = await sqlRows<{ name: string }>(
    em,
    sql`select name from pragma_table_list where schema = 'main' and type = 'table' and name not like 'sqlite_%' and name <> ${BOOKKEEPING}`,
  );
  const indexes: Index[] = [];
  for (const { name: table } of tables) {
    const columns = await sqlRows<{ name: string; type: string; notnull: number; pk: number }>(em, sql`select name, type, "notnull", pk from pragma_table_info(${table})`);
    for (const column of columns) {
      // A SQLite primary key that is not an INTEGER one still takes NULL unless declared not
      // null (a documented SQLite quirk), but every row is written by the ORM with its key, so
      // the key's columns count as not null, as PostgreSQL makes them.
      const nullable = column.notnull === 0 && column.pk === 0;
      lines.push(`${table}.${column.name}: ${sqliteKind(column.type)}${nullable ? ' null' : ' not null'}`);
    }
    const key = columns.filter((column) => column.pk > 0).sort((a, b) => a.pk - b.pk);
    if (key.length > 0) lines.push(`${table} primary key (${key.map((column) => column.name).join(', ')})`);
    const list = await sqlRows<{ name: string; unique: number; origin: string; partial: number }>(em, sql`select name, "unique", origin, partial from pragma_index_list(${table})`);
    for (const index of list) {
      const columnsOf = await sqlRows<{ name: string }>(em, sql`select name from pragma_index_info(${index.name}) order by seqno`);
      const [definition] = await sqlRows<{ sql: string | null }>(em, sql`select sql from sqlite_master where type = 'index' and name = ${index.name}`);
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

export async function postgresSchema(em: Em): Promise<string[]> {
  const lines: string[] = [];
  const columns = await sqlRows<{ table_name: string; column_name: string; data_type: string; character_maximum_length: number | null; is_nullable: string }>(
    em,
    sql`select c.table_name, c.column_name, c.data_type, c.character_maximum_length, c.is_nullable
       from information_schema.columns c
       join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
      where c.table_schema = current_schema() and t.table_type = 'BASE TABLE' and c.table_name <> ${BOOKKEEPING}`,
  );
  for (const column of columns) {
    if (`${column.table_name}.${column.column_name}` in DIALECT_ONLY_COLUMNS) continue;
    const nullable = column.is_nullable === 'YES';
    lines.push(`${column.table_name}.${column.column_name}: ${postgresKind(column.data_type, column.character_maximum_length)}${nullable ? ' null' : ' not null'}`);
  }
  const indexes = await sqlRows<Index>(
    em,
    sql`select t.relname as "table", i.relname as name, x.indisunique as "unique", x.indisprimary as "primary",
            exists (select 1 from pg_constraint k where k.conindid = x.indexrelid and k.contype = 'u') as "constraint",
            coalesce(pg_get_expr(x.indpred, x.indrelid), '') as "where",
            array(select a.attname::text from unnest(x.indkey::int2[]) with ordinality as k(attnum, n)
                    join pg_attribute a on a.attrelid = x.indrelid and a.attnum = k.attnum order by k.n) as columns
       from pg_index x
       join pg_class i on i.oid = x.indexrelid
       join pg_class t on t.oid = x.indrelid
      where t.relnamespace = current_schema()::regnamespace and t.relname <> ${BOOKKEEPING}`,
  );
  for (const index of indexes) {
    if (index.primary) lines.push(`${index.table} primary key (${index.columns.join(', ')})`);
    index.where = predicate(index.where);
  }
  return [...lines, ...indexLines(indexes)];
}

/** Drops the lines (each starts with its table's name) of tables one dialect has by design. */
export function shared(lines: string[], dialect: string): string[] {
  return lines.filter((line) => DIALECT_ONLY_TABLES[/^\w+/.exec(line)![0]] !== dialect).sort();
}


/** A column type as the ORM declares it on PostgreSQL, as a logical kind (see postgresKind). */
function postgresDeclaredKind(declared: string): string {
  const type = declared.trim().toLowerCase();
  const length = /\((\d+)\)/.exec(type)?.[1];
  if (/^(varchar|character varying)/.test(type)) return postgresKind('character varying', length ? Number(length) : null);
  if (/^(char|character)\b/.test(type)) return postgresKind('character', Number(length ?? 1));
  if (/^timestamptz|^timestamp/.test(type)) return 'timestamp';
  if (/^(int|integer|int4|bigint|int8|smallint)$/.test(type)) return 'integer';
  if (/^(text|json|jsonb|boolean|bytea)$/.test(type)) return postgresKind(type === 'jsonb' ? 'jsonb' : type, null);
  if (/^(real|double precision|numeric|float8)/.test(type)) return 'number';
  return `unknown(${type})`;
}

/**
 * The schema the entities describe (server/src/db/entities.ts), as the ORM sees them on the
 * dialect it was opened on, in the lines the catalog readers above write. Foreign keys, CHECK
 * constraints and collations are the migrations' alone, and neither side has a line for them.
 */
export function entitySchema(orm: Orm, dialect: 'sqlite' | 'postgresql'): string[] {
  const lines: string[] = [];
  const indexes: Index[] = [];
  for (const meta of orm.getMetadata().getAll().values()) {
    const table = meta.tableName;
    const columnOf = (property: unknown) => meta.properties[String(property) as keyof typeof meta.properties]!.fieldNames[0]!;
    for (const prop of meta.props) {
      if (prop.persist === false) continue;
      const column = prop.fieldNames[0]!;
      const declared = prop.columnTypes[0]!;
      const kind = dialect === 'sqlite' ? sqliteKind(declared) : postgresDeclaredKind(declared);
      lines.push(`${table}.${column}: ${kind}${prop.nullable && !prop.primary ? ' null' : ' not null'}`);
      if (prop.unique) indexes.push({ table, name: '', columns: [column], unique: true, primary: false, constraint: true, where: '' });
    }
    lines.push(`${table} primary key (${meta.primaryKeys.map(columnOf).join(', ')})`);
    for (const [declared, unique] of [[meta.indexes, false], [meta.uniques, true]] as const) {
      for (const index of declared) {
        const properties = Array.isArray(index.properties) ? index.properties : [index.properties];
        const where = typeof index.where === 'string' ? predicate(index.where) : '';
        indexes.push({ table, name: index.name ?? '', columns: properties.map(columnOf), unique, primary: false, constraint: false, where });
      }
    }
  }
  return [...lines, ...indexLines(indexes)];
}
