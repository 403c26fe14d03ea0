import { Migration } from '@mikro-orm/migrations';

export class Migration0003AnnotationQueues extends Migration {
  override up(): void {
    this.addSql(`create table annotation_specs (
      project_id text not null references projects (id),
      name text not null,
      digest text not null,
      description text null,
      field_schema jsonb not null,
      created_at timestamptz(3) not null,
      created_by text not null references users (id),
      primary key (project_id, name, digest))`);
    this.addSql(`create table annotation_queues (
      id varchar(36) primary key,
      project_id text not null references projects (id),
      name text not null,
      description text null,
      scorer_refs jsonb not null,
      annotations_per_item integer not null,
      lease_seconds integer not null,
      created_at timestamptz(3) not null,
      created_by text not null references users (id),
      updated_at timestamptz(3) not null,
      deleted_at timestamptz(3) null)`);
    this.addSql(`create index annotation_queues_project_idx on annotation_queues (project_id, created_at)`);
    this.addSql(`create table annotation_queue_items (
      id varchar(36) primary key,
      project_id text not null,
      queue_id text not null references annotation_queues (id),
      call_id text collate "C" not null,
      call_started_at timestamptz(3) not null,
      call_ended_at timestamptz(3) null,
      call_op_name text collate "C" not null,
      call_trace_id text not null,
      display_fields jsonb not null,
      state text not null default 'unstarted',
      state_annotator_user_id text null,
      state_updated_at timestamptz(3) null,
      added_by text not null references users (id),
      created_at timestamptz(3) not null,
      created_by text not null references users (id),
      updated_at timestamptz(3) not null,
      deleted_at timestamptz(3) null)`);
    // Text sorts bytewise (collate "C") so that item order is the same as on SQLite.
    // One live item per call and queue: the guard against duplicates under concurrent adds.
    this.addSql(`create unique index annotation_queue_items_call_uq on annotation_queue_items (queue_id, call_id) where deleted_at is null`);
    for (const column of ['created_at', 'updated_at', 'call_started_at', 'call_op_name']) {
      this.addSql(`create index annotation_queue_items_${column}_idx on annotation_queue_items (queue_id, ${column}, id) where deleted_at is null`);
    }
    this.addSql(`create table annotation_item_progress (
      item_id text not null references annotation_queue_items (id),
      annotator_user_id text not null references users (id),
      queue_id text not null,
      state text not null check (state in ('in_progress', 'completed', 'skipped')),
      lease_expires_at timestamptz(3) null,
      created_at timestamptz(3) not null,
      updated_at timestamptz(3) not null,
      primary key (item_id, annotator_user_id))`);
    this.addSql(`create index annotation_item_progress_queue_idx on annotation_item_progress (queue_id, annotator_user_id)`);
  }
}
