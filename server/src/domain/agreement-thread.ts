import { parentPort } from 'node:worker_threads';
import type { AgreementLevel } from '@loupe/shared';
import { ownSqliteScope } from '../db/sql.ts';
import { openSqliteReader } from '../db/sqlite-dialect.ts';
import { AgreementDeadline } from './agreement-deadline.ts';
import { agreementStatistics, type AgreementStatistics, type RatedItem } from './agreement-statistics.ts';
import { QueueItems, specTask, withItems, type AgreementTask, type ValuesScope } from './agreement-values.ts';
import { DomainError, type DomainErrorKind } from './errors.ts';

// The code of an agreement worker thread (agreement-workers.ts starts it): the statistics of one
// scorer spec, away from the event loop. The values come compact (typed arrays and the distinct
// values' JSON text once each), as structured cloning of one object per value would cost the
// event loop much of what the thread saves it. On SQLite the thread reads the spec's values
// itself, through a read-only connection of its own: two specs are then read at once, each on a
// core, and the event loop runs no agreement statement.

export type { AgreementTask } from './agreement-values.ts';

/** A spec of a queue for a thread to read on SQLite: where the database is, what to read, and the time left. */
export type SqliteSpec = {
  path: string;
  queue: { queueId: string; coverage: number };
  scope: Omit<ValuesScope, 'deadline'> & { level: AgreementLevel };
  timeoutMs: number;
  remainingMs: number;
};

/** What a thread is asked: statistics of values read (`task`), or a spec to read and compute (`sqlite`). */
export type ThreadWork = { task: AgreementTask } | { sqlite: SqliteSpec };

/** What a thread answers: the statistics, or the domain error that stopped the work (any other error is the thread's own). */
export type ThreadAnswer = { statistics: AgreementStatistics } | { refused: { kind: DomainErrorKind; reason: string } } | { failed: string };

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

/**
 * A spec read through a read-only connection of this thread's own, and its statistics with their
 * items named. The connection is the read's alone (opening one costs about a millisecond): a
 * file replaced meanwhile is never read through a connection to the one it replaced.
 */
async function sqliteSpecStatistics({ path, queue, scope, timeoutMs, remainingMs }: SqliteSpec): Promise<AgreementStatistics> {
  const deadline = new AgreementDeadline(timeoutMs, remainingMs);
  const reader = openSqliteReader(path);
  try {
    const db = ownSqliteScope(reader);
    const { task, rated } = await specTask(db, new QueueItems(db, queue), { ...scope, deadline });
    deadline.check();
    return withItems(taskStatistics(task), rated);
  } finally {
    reader.close();
  }
}

async function answer(work: ThreadWork): Promise<ThreadAnswer> {
  try {
    return { statistics: 'task' in work ? taskStatistics(work.task) : await sqliteSpecStatistics(work.sqlite) };
  } catch (error) {
    if (error instanceof DomainError) return { refused: { kind: error.kind, reason: error.message } };
    return { failed: error instanceof Error ? (error.stack ?? error.message) : String(error) };
  }
}

parentPort?.on('message', (work: ThreadWork) => {
  void answer(work).then((reply) => parentPort!.postMessage(reply));
});
