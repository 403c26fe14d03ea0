import { Migration } from '@mikro-orm/migrations';

/**
 * Assignment and overlap (contract 5.11): the annotator role; a queue's access, assignees and
 * overlap coverage; an item's assignee and its coverage point, a stable hash of its id in [0, 1)
 * (domain/coverage.ts) computed here for the items stored before it, with the same arithmetic:
 * the first 52 bits of the SHA-256 of the id over 2^52. No default: every writer of items sets it.
 */
export class Migration0014AssignmentOverlap extends Migration {
  override up(): void {
    this.addSql(`alter table memberships drop constraint memberships_role_check`);
    this.addSql(`alter table memberships add constraint memberships_role_check check (role in ('admin', 'member', 'annotator', 'viewer'))`);
    this.addSql(`alter table annotation_queues add column access text not null default 'open' check (access in ('open', 'assigned'))`);
    this.addSql(`alter table annotation_queues add column overlap_coverage double precision not null default 1 check (overlap_coverage > 0 and overlap_coverage <= 1)`);
    this.addSql(`create table annotation_queue_assignees (
      queue_id text not null references annotation_queues (id),
      user_id text not null references users (id),
      created_at timestamptz(3) not null,
      primary key (queue_id, user_id))`);
    this.addSql(`create index annotation_queue_assignees_user_idx on annotation_queue_assignees (user_id)`);
    this.addSql(`alter table annotation_queue_items add column assigned_user_id text null references users (id)`);
    this.addSql(`alter table annotation_queue_items add column coverage_point double precision null`);
    this.addSql(`update annotation_queue_items
      set coverage_point = ('x' || substr(encode(sha256(convert_to(id, 'UTF8')), 'hex'), 1, 13))::bit(52)::bigint / 4503599627370496.0::float8`);
    this.addSql(`alter table annotation_queue_items alter column coverage_point set not null`);
    this.addSql(`alter table annotation_queue_items add constraint annotation_queue_items_coverage_point_check check (coverage_point >= 0 and coverage_point < 1)`);
    // The items assigned to one user, in queue order: the second step of a claim (domain/claim.ts).
    this.addSql(`create index annotation_queue_items_assigned_idx on annotation_queue_items (queue_id, assigned_user_id, created_at, id)
      where deleted_at is null and assigned_user_id is not null`);
  }
}
