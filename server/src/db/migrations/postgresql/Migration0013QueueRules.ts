import { Migration } from '@mikro-orm/migrations';

/**
 * Queue rules (contract 5.10): `queue_rules`, their counts per UTC day (`queue_rule_days`, the
 * stats and the daily cap), and on items the rule that added them. A rule never adds a call again
 * whose item was deleted: an index of the deleted items by (queue, call) answers that beside the
 * unique index of the live ones (indexing the deleted ones only costs nothing on the inserts).
 */
export class Migration0013QueueRules extends Migration {
  override up(): void {
    this.addSql(`create table queue_rules (
      id text primary key,
      project_id text not null references projects (id),
      queue_id text not null references annotation_queues (id),
      name text not null,
      trigger text not null check (trigger in ('call', 'feedback')),
      filter jsonb not null,
      sample_rate double precision not null check (sample_rate > 0 and sample_rate <= 1),
      max_items_per_day integer null,
      enabled boolean not null,
      created_by text not null references users (id),
      created_at timestamptz(3) not null,
      updated_at timestamptz(3) not null,
      deleted_at timestamptz(3) null,
      backfill_since timestamptz(3) null,
      backfill_state text null check (backfill_state in ('running', 'done', 'failed')),
      backfill_considered integer not null,
      backfill_added integer not null,
      backfill_reason text null,
      backfill_until timestamptz(3) null,
      backfill_after_started_at timestamptz(3) null,
      backfill_after_id text null,
      backfill_lease_owner text null,
      backfill_lease_expires_at timestamptz(3) null,
      backfill_failures integer not null)`);
    this.addSql(`create index queue_rules_queue_idx on queue_rules (queue_id, created_at) where deleted_at is null`);
    this.addSql(`create index queue_rules_project_idx on queue_rules (project_id, trigger) where deleted_at is null`);
    this.addSql(`create index queue_rules_backfill_idx on queue_rules (backfill_state, backfill_lease_expires_at) where deleted_at is null`);
    this.addSql(`create table queue_rule_days (
      rule_id text not null references queue_rules (id),
      day text not null,
      considered integer not null,
      matched integer not null,
      sampled_out integer not null,
      capped integer not null,
      added integer not null,
      last_added_at timestamptz(3) null,
      primary key (rule_id, day))`);
    // No foreign key: its check would take a share lock on the rule's row for every item, from every
    // concurrent write the rule adds to (PostgreSQL makes a multixact of such locks).
    this.addSql(`alter table annotation_queue_items add column rule_id text null`);
    this.addSql(`create index annotation_queue_items_deleted_call_idx on annotation_queue_items (queue_id, call_id) where deleted_at is not null`);
  }
}
