import { Migration } from '@mikro-orm/migrations';

/**
 * The agreement of a queue (contract 5.7) reads every annotation record of one queue and spec:
 * this index finds them without scanning the project's feedback. Partial: most feedback names no
 * queue and costs nothing here.
 */
export class Migration0007FeedbackQueueIndex extends Migration {
  override up(): void {
    this.addSql(`create index feedback_queue_idx on feedback (queue_id, annotation_ref) where queue_id is not null`);
  }
}
