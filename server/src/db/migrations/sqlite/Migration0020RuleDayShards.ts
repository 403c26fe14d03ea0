import { Migration } from '@mikro-orm/migrations';

/**
 * A rule's counts of a day in several rows, as on PostgreSQL (see its 0020). SQLite cannot change a
 * primary key in place: the table is rebuilt, the counts so far in shard 0.
 */
export class Migration0020RuleDayShards extends Migration {
  override up(): void {
    this.addSql(`create table queue_rule_days_next (
      rule_id text not null references queue_rules (id),
      day text not null,
      shard integer not null,
      considered integer not null,
      matched integer not null,
      sampled_out integer not null,
      capped integer not null,
      added integer not null,
      last_added_at datetime null,
      primary key (rule_id, day, shard))`);
    this.addSql(`insert into queue_rule_days_next (rule_id, day, shard, considered, matched, sampled_out, capped, added, last_added_at)
      select rule_id, day, 0, considered, matched, sampled_out, capped, added, last_added_at from queue_rule_days`);
    this.addSql(`drop table queue_rule_days`);
    this.addSql(`alter table queue_rule_days_next rename to queue_rule_days`);
  }
}
