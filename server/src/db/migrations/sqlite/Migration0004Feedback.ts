import { Migration } from '@mikro-orm/migrations';

export class Migration0004Feedback extends Migration {
  override up(): void {
    this.addSql(`create table feedback (
      project_id text not null references projects (id),
      id text not null,
      svc_ref text not null,
      feedback_type text not null,
      payload json not null,
      creator text null,
      annotation_ref text null,
      runnable_ref text null,
      call_ref text null,
      trigger_ref text null,
      queue_id text null,
      svc_user_id text not null references users (id),
      created_at datetime not null,
      request_hash text null,
      primary key (project_id, id))`);
    this.addSql(`create index feedback_created_idx on feedback (project_id, created_at, id)`);
    this.addSql(`create index feedback_svc_ref_idx on feedback (project_id, svc_ref)`);
  }
}
