import { Migration } from '@mikro-orm/migrations';

/** Every column that held a length limit on PostgreSQL only, with the table it belongs to. */
const LIMITED: Record<string, string[]> = {
  users: ['id', 'username'],
  api_keys: ['id', 'user_id', 'key_hash'],
  entities: ['name'],
  memberships: ['user_id', 'entity', 'role'],
  projects: ['id', 'entity', 'name'],
  calls: ['project_id', 'id', 'trace_id', 'op_name', 'request_hash', 'created_by'],
  annotation_queues: ['id'],
  annotation_queue_items: ['id'],
  feedback: ['id'],
};

/**
 * One column definition on both dialects: `text`, as on SQLite, which never enforced the
 * varchar/char lengths of Migration0001-0004. The limits live where both dialects share them, in
 * the API's and the admin tool's input validation; a value the database alone would refuse was a
 * PostgreSQL-only failure. `char(64)` also padded with blanks, which `text` does not.
 */
export class Migration0006UnlimitedText extends Migration {
  override up(): void {
    for (const [table, columns] of Object.entries(LIMITED)) {
      this.addSql(`alter table ${table} ${columns.map((column) => `alter column ${column} type text`).join(', ')}`);
    }
  }
}
