import { hash } from 'node:crypto';
import { sql, type Statement } from '../db/statement.ts';

// Overlap (contract 5.11): a queue's annotations_per_item applies to the share overlap_coverage of
// its items, and every other item needs one annotator. Which items are covered depends on the item
// id alone: its coverage point, the first 52 bits of the SHA-256 of the id over 2^52 (a double in
// [0, 1), exact), is stored with the item when it is added (Migration0014 computed it, with the
// same arithmetic, for items added before), and an item is covered when its point is below the
// queue's coverage. So every process, restart and database makes the same choice, and changing the
// coverage re-divides the items without rewriting them. The share of covered items is a binomial
// proportion: within sampling error of the coverage.

const TWO_TO_52 = 2 ** 52;

/** The coverage point of an item id: in [0, 1), uniform over ids. */
export function coveragePoint(itemId: string): number {
  // The one-shot hash: the same hex as createHash().update().digest('hex') in a third of the time.
  return parseInt(hash('sha256', itemId).slice(0, 13), 16) / TWO_TO_52;
}

/** What an item's quota depends on: its queue's overlap settings. */
export type Overlap = { annotations_per_item: number; overlap_coverage: number };

/** An item's quota (`annotations_required`): the queue's annotations_per_item when covered, else 1. */
export function annotationsRequired(point: number, queue: Overlap): number {
  return point < Number(queue.overlap_coverage) ? Number(queue.annotations_per_item) : 1;
}

/** The quota of items `i` of one queue as SQL, the queue's settings as parameters. */
export function requiredOfQueue(queue: Overlap): Statement {
  return sql`(case when i.coverage_point < ${Number(queue.overlap_coverage)} then ${Number(queue.annotations_per_item)} else 1 end)`;
}

/** The quota of items `i` as SQL, read from their queue `q` (joined by the statement). */
export const REQUIRED_FROM_QUEUE = sql`(case when i.coverage_point < q.overlap_coverage then q.annotations_per_item else 1 end)`;
