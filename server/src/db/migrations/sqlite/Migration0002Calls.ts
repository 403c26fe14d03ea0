import { Migration } from '@mikro-orm/migrations';

export class Migration0002Calls extends Migration {
  override up(): void {
    this.addSql(`create table calls (
      project_id text not null references projects (id),
      id text not null,
      trace_id text not null,
      op_name text not null,
      started_at datetime not null,
      ended_at datetime null,
      inputs json null,
      output json null,
      attributes json null,
      exception text null,
      request_hash text not null,
      created_at datetime not null,
      created_by text not null references users (id),
      primary key (project_id, id))`);
    this.addSql(`create index calls_trace_idx on calls (project_id, trace_id)`);
    this.addSql(`create index calls_op_name_idx on calls (project_id, op_name)`);
    this.addSql(`create index calls_started_idx on calls (project_id, started_at, id)`);
  }
}
