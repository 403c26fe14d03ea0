import { unitOfWork, openDatabase, sql, sqlRows, sqlRun } from '@loupe/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase, postgresAvailable, type TestDatabase } from '../harness/databases.ts';
import { postgresSchema, shared, sqliteSchema } from '../harness/schema-facts.ts';

// Each dialect has its own migrations (server/src/db/migrations/{sqlite,postgresql}), so nothing
// but this test keeps them describing the same schema. Both databases are migrated with the
// project's own migrations, each catalog is read back and reduced to one line per fact (column,
// primary key, index), and the two sets of lines must be equal.

const NAME = 'SQLite and PostgreSQL migrations describe the same schema';

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
      await sqlRun(em, sql`insert into users values ('u1', 'alice', now())`);
      await sqlRun(em, sql`insert into api_keys values ('k1', 'u1', ${hash}, now(), null)`);
      await sqlRun(em, sql`insert into entities values ('acme', now())`);
      await sqlRun(em, sql`insert into memberships values ('u1', 'acme', 'member', now())`);
      await sqlRun(em, sql`insert into projects values ('acme/p', 'acme', 'p', now())`);
      await sqlRun(em, sql`insert into calls (project_id, id, trace_id, op_name, started_at, request_hash, created_at, created_by) values ('acme/p', 'c1', 't1', 'chat', now(), ${hash}, now(), 'u1')`);
      const before = await sqlRows(em, sql`select k.key_hash, u.username, m.role, p.name, c.op_name, c.request_hash from api_keys k join users u on u.id = k.user_id join memberships m on m.user_id = u.id join projects p on p.entity = m.entity join calls c on c.project_id = p.id`);
      expect(before).toHaveLength(1);

      await orm.migrator.up();
      const after = await sqlRows(em, sql`select k.key_hash, u.username, m.role, p.name, c.op_name, c.request_hash from api_keys k join users u on u.id = k.user_id join memberships m on m.user_id = u.id join projects p on p.entity = m.entity join calls c on c.project_id = p.id`);
      expect(after).toEqual(before);
      expect(after[0]).toMatchObject({ key_hash: hash, username: 'alice', role: 'member', op_name: 'chat' });
      // A key hash is found by equality after the change of type, through its unique index.
      expect(await sqlRows(em, sql`select id from api_keys where key_hash = ${hash}`)).toEqual([{ id: 'k1' }]);
      // No length is enforced any more (SQLite never enforced one): the API's validation is the limit.
      await sqlRun(em, sql`update users set username = ${'b'.repeat(200)} where id = 'u1'`);
      expect(await sqlRows(em, sql`select length(username)::int as n from users`)).toEqual([{ n: 200 }]);
    } finally {
      await orm.close(true);
    }
  });
});
