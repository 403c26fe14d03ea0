import { createHash } from 'node:crypto';
import { Migration } from '@mikro-orm/migrations';

/** Items whose coverage point is computed per statement. */
const CHUNK = 1000;

/**
 * Assignment and overlap (contract 5.11), as on PostgreSQL. SQLite cannot change a CHECK
 * constraint in place, so memberships is rebuilt with the annotator role; it cannot add a NOT NULL
 * column without a default either, so the coverage point (a stable hash of the item id,
 * domain/coverage.ts; the same arithmetic here, since SQLite has no SHA-256) defaults to -1, is
 * computed for the items stored before it, and a trigger refuses an item written without one.
 * Statements run in order through `execute`, since the computation reads the table in between.
 */
export class Migration0014AssignmentOverlap extends Migration {
  override async up(): Promise<void> {
    await this.execute(`create table memberships_next (
      user_id text not null references users (id),
      entity text not null references entities (name),
      role text not null check (role in ('admin', 'member', 'annotator', 'viewer')),
      created_at datetime not null,
      primary key (user_id, entity))`);
    await this.execute(`insert into memberships_next (user_id, entity, role, created_at) select user_id, entity, role, created_at from memberships`);
    await this.execute(`drop table memberships`);
    await this.execute(`alter table memberships_next rename to memberships`);

    await this.execute(`alter table annotation_queues add column access text not null default 'open' check (access in ('open', 'assigned'))`);
    await this.execute(`alter table annotation_queues add column overlap_coverage real not null default 1 check (overlap_coverage > 0 and overlap_coverage <= 1)`);
    await this.execute(`create table annotation_queue_assignees (
      queue_id text not null references annotation_queues (id),
      user_id text not null references users (id),
      created_at datetime not null,
      primary key (queue_id, user_id))`);
    await this.execute(`create index annotation_queue_assignees_user_idx on annotation_queue_assignees (user_id)`);
    await this.execute(`alter table annotation_queue_items add column assigned_user_id text null references users (id)`);
    await this.execute(`alter table annotation_queue_items add column coverage_point real not null default -1`);
    for (let after = ''; ; ) {
      const rows = (await this.execute(`select id from annotation_queue_items where id > ? order by id limit ${CHUNK}`, [after])) as { id: string }[];
      for (const { id } of rows) {
        const point = parseInt(createHash('sha256').update(id).digest('hex').slice(0, 13), 16) / 2 ** 52;
        await this.execute(`update annotation_queue_items set coverage_point = ? where id = ?`, [point, id]);
      }
      if (rows.length < CHUNK) break;
      after = rows.at(-1)!.id;
    }
    await this.execute(`create trigger annotation_queue_items_coverage_point_check before insert on annotation_queue_items
      when not (new.coverage_point >= 0 and new.coverage_point < 1)
      begin select raise(abort, 'annotation_queue_items.coverage_point must be in [0, 1)'); end`);
    await this.execute(`create index annotation_queue_items_assigned_idx on annotation_queue_items (queue_id, assigned_user_id, created_at, id)
      where deleted_at is null and assigned_user_id is not null`);
  }
}
