import { Migration } from '@mikro-orm/migrations';

/**
 * A rule's counts of a day in several rows (contract 5.10's stats, domain/rule-items.ts): a write
 * counts into one `shard` of them, so concurrent writes to a project with rules seldom wait for
 * each other's commit on one row. The counts so far become shard 0, the row a capped rule counts in.
 */
export class Migration0020RuleDayShards extends Migration {
  override up(): void {
    this.addSql(`alter table queue_rule_days add column shard integer not null default 0`);
    this.addSql(`alter table queue_rule_days drop constraint queue_rule_days_pkey`);
    this.addSql(`alter table queue_rule_days add primary key (rule_id, day, shard)`);
  }
}
