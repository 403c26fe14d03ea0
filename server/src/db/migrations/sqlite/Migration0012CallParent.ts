import { Migration } from '@mikro-orm/migrations';

/**
 * Calls know the call they ran inside (contract 5.1): `parent_id`, null for a trace's root. No
 * foreign key: spans of one trace arrive in any order, so a parent may be stored after its child.
 *
 * - `calls_trace_parent_idx` (project_id, trace_id, parent_id) serves the calls of a trace nested by
 *   parent (a trace's root, the children of a call within a trace). It replaces `calls_trace_idx`
 *   (project_id, trace_id), its prefix, which it serves as well.
 * - `calls_parent_idx` (project_id, parent_id, started_at, id) serves `parent_ids` and `root_only`
 *   (`parent_id is null`) in the calls query's order, so a page of roots reads its rows in order
 *   and stops at the limit.
 */
export class Migration0012CallParent extends Migration {
  override up(): void {
    this.addSql(`alter table calls add column parent_id text null`);
    this.addSql(`create index calls_trace_parent_idx on calls (project_id, trace_id, parent_id)`);
    this.addSql(`drop index calls_trace_idx`);
    this.addSql(`create index calls_parent_idx on calls (project_id, parent_id, started_at, id)`);
  }
}
