import { parentPort } from 'node:worker_threads';
import { agreementStatistics, type AgreementLevel, type AgreementStatistics, type RatedItem } from './agreement-statistics.ts';

// The code of an agreement worker thread (agreement-workers.ts starts it): the statistics of one
// scorer spec, away from the event loop. The values come compact (typed arrays and the distinct
// values' JSON text once each), as structured cloning of one object per value would cost the
// event loop much of what the thread saves it.

/** One spec's latest values, item by item. */
export interface AgreementTask {
  level: AgreementLevel;
  annotators: string[];
  /** The JSON text of each distinct value. */
  texts: string[];
  /** Items in no order; the thread sorts them by creation time, then id. */
  itemIds: string[];
  itemCreatedMs: Float64Array<ArrayBuffer>;
  /** Item i's values are entries itemStarts[i] to itemStarts[i + 1] − 1. */
  itemStarts: Int32Array<ArrayBuffer>;
  /** Each value's annotator (an index into `annotators`) and text (an index into `texts`). */
  entryAnnotator: Int32Array<ArrayBuffer>;
  entryText: Int32Array<ArrayBuffer>;
}

/** The statistics of a task; a disagreement's `item_id` is the item's index in the task, its `call_id` empty. */
export function taskStatistics(task: AgreementTask): AgreementStatistics {
  const parsed = task.texts.map((text) => JSON.parse(text) as unknown);
  const order = Array.from(task.itemIds, (_, i) => i).sort(
    (a, b) => task.itemCreatedMs[a]! - task.itemCreatedMs[b]! || (task.itemIds[a]! < task.itemIds[b]! ? -1 : task.itemIds[a]! > task.itemIds[b]! ? 1 : 0),
  );
  const items: RatedItem[] = order.map((i) => {
    const values: Record<string, unknown> = Object.create(null);
    for (let e = task.itemStarts[i]!; e < task.itemStarts[i + 1]!; e++) values[task.annotators[task.entryAnnotator[e]!]!] = parsed[task.entryText[e]!];
    return { item_id: String(i), call_id: '', values };
  });
  return agreementStatistics(items, task.level);
}

parentPort?.on('message', (task: AgreementTask) => {
  parentPort!.postMessage(taskStatistics(task));
});
