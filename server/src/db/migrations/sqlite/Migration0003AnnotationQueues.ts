import { Migration } from '@mikro-orm/migrations';

export class Migration0003AnnotationQueues extends Migration {
  override up(): void {
    this.addSql(`create table annotation_specs (
      project_id text not null references projects (id),
      name text not null,
      digest text not null,
      description text null,
      field_schema json not null,
      created_at datetime not null,
      created_by text not null references users (id),
      primary key (project_id, name, digest))`);
    this.addSql(`create table annotation_queues (
      id text primary key,
      project_id text not null references projects (id),
      name text not null,
      description text null,
      scorer_refs json not null,
      annotations_per_item integer not null,
      lease_seconds integer not null,
      created_at datetime not null,
      created_by text not null references users (id),
      updated_at datetime not null,
      deleted_at datetime null)`);
    this.addSql(`create index annotation_queues_project_idx on annotation_queues (project_id, created_at)`);
    this.addSql(`create table annotation_queue_items (
      id text primary key,
      project_id text not null,
      queue_id text not null references annotation_queues (id),
      call_id text not null,
      call_started_at datetime not null,
      call_ended_at datetime null,
      call_op_name text not null,
      call_trace_id text not null,
      display_fields json not null,
      state text not null default 'unstarted',
      state_annotator_user_id text null,
      state_updated_at datetime null,
      added_by text not null references users (id),
      created_at datetime not null,
      created_by text not null references users (id),
      updated_at datetime not null,
      deleted_at datetime null)`);
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
      lease_expires_at datetime null,
      created_at datetime not null,
      updated_at datetime not null,
      primary key (item_id, annotator_user_id))`);
    this.addSql(`create index annotation_item_progress_queue_idx on annotation_item_progress (queue_id, annotator_user_id)`);
  }
}
