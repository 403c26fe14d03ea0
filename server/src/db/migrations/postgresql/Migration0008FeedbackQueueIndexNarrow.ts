import { Migration } from '@mikro-orm/migrations';

/**
 * feedback_queue_idx keys only what the agreement of a queue (contract 5.7) looks records up by,
 * the queue and the spec's ref, now that the agreement keeps each annotator's latest record itself
 * and reads them in no order. The keys repeat for every record of a queue's spec, so PostgreSQL
 * stores them deduplicated: on 365,000 records, 2.9 MB instead of 168 MB for the old key, which
 * ran on through annotator, refs, creation time and id — small enough for its planner to choose
 * the index by itself. Each feedback write also updates a smaller index on both databases.
 */
export class Migration0008FeedbackQueueIndexNarrow extends Migration {
  override up(): void {
    this.addSql(`drop index feedback_queue_idx`);
    this.addSql(`create index feedback_queue_idx on feedback (queue_id, annotation_ref) where queue_id is not null`);
  }
}
