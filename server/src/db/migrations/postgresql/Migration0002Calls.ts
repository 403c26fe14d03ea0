import { Migration } from '@mikro-orm/migrations';

export class Migration0002Calls extends Migration {
  override up(): void {
    this.addSql(`create table calls (
      project_id varchar(257) not null references projects (id),
      id varchar(128) not null,
      trace_id varchar(128) not null,
      op_name varchar(1024) not null,
      started_at timestamptz(3) not null,
      ended_at timestamptz(3) null,
      inputs jsonb null,
      output jsonb null,
      attributes jsonb null,
      exception text null,
      request_hash char(64) not null,
      created_at timestamptz(3) not null,
      created_by varchar(36) not null references users (id),
      primary key (project_id, id))`);
    this.addSql(`create index calls_trace_idx on calls (project_id, trace_id)`);
    this.addSql(`create index calls_op_name_idx on calls (project_id, op_name)`);
    this.addSql(`create index calls_started_idx on calls (project_id, started_at, id)`);
  }
}
