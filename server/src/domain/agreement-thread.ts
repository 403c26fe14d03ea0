import { parentPort } from 'node:worker_threads';
import type { AgreementLevel } from '@loupe/shared';
import { openPostgresReader, type PostgresConnection } from '../db/postgres-reader.ts';
import { openSqliteReader } from '../db/sqlite-reader.ts';
import type { StatementReader } from '../db/statement-reader.ts';
import { AgreementDeadline } from './agreement-deadline.ts';
import { agreementStatistics, type AgreementStatistics, type RatedItem } from './agreement-statistics.ts';
import { specTask, withItems, type AgreementTask, type ValuesScope } from './agreement-values.ts';
import { DomainError, type DomainErrorKind } from './errors.ts';

// The code of an agreement worker thread (agreement-workers.ts starts it): the statistics of one
// scorer spec, away from the event loop. The values come compact (typed arrays and the distinct
// values' JSON text once each), as structured cloning of one object per value would cost the
// event loop much of what the thread saves it. Or the thread reads the spec's values itself,
// through a connection of its own: two specs are then read at once, each on a core, and the event
// loop neither runs nor decodes an agreement statement.

export type { AgreementTask } from './agreement-values.ts';

/** Where a thread reads: the SQLite file, or PostgreSQL as the server's pool reaches it. */
export type SpecDatabase = { sqlite: string } | { postgresql: PostgresConnection };

/** A spec of a queue for a thread to read: where, what, and the time left. */
export type SpecRead = {
  database: SpecDatabase;
  queue: { queueId: string; coverage: number };
  scope: Omit<ValuesScope, 'deadline'> & { level: AgreementLevel };
  timeoutMs: number;
  remainingMs: number;
};

/** What a thread is asked: statistics of values read (`task`), or a spec to read and compute (`read`). */
export type ThreadWork = { task: AgreementTask } | { read: SpecRead };

/**
 * What a thread answers: the statistics, the domain error that stopped the work, or another
 * error with what tells a database that cannot serve (its driver's `code` and `errcode`: the
 * error policy answers 503 to it, as to the same error on the event loop).
 */
export type ThreadAnswer =
  | { statistics: AgreementStatistics }
  | { refused: { kind: DomainErrorKind; reason: string } }
  | { failed: { message: string; stack: string | undefined; code: unknown; errcode: unknown } };

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

/** This thread's pool of connections to PostgreSQL (it closes them when idle), and the URL it reaches. */
let postgresReader: { url: string; reader: StatementReader & { close(): Promise<void> } } | undefined;

/**
 * `work` on a connection of this thread's own: a read-only SQLite connection of the read's alone
 * (opening one costs about a millisecond, and a file replaced meanwhile is never read through a
 * connection to the one it replaced), or this thread's pool to PostgreSQL (one server's threads
 * all reach one database; a pool to another is closed).
 */
async function onOwnConnection<T>(database: SpecDatabase, work: (db: StatementReader) => Promise<T>): Promise<T> {
  if ('postgresql' in database) {
    const { url } = database.postgresql;
    if (postgresReader?.url !== url) {
      void postgresReader?.reader.close().catch(() => undefined);
      postgresReader = { url, reader: openPostgresReader(database.postgresql) };
    }
    return work(postgresReader.reader);
  }
  const reader = openSqliteReader(database.sqlite);
  try {
    return await work(reader);
  } finally {
    reader.close();
  }
}

/** A spec read on a connection of this thread's own, and its statistics with their items named. */
async function specStatistics({ database, queue, scope, timeoutMs, remainingMs }: SpecRead): Promise<AgreementStatistics> {
  const deadline = new AgreementDeadline(timeoutMs, remainingMs);
  const { task, rated } = await onOwnConnection(database, (db) => specTask(db, { ...scope, queue, deadline }));
  deadline.check();
  return withItems(taskStatistics(task), rated);
}

async function answer(work: ThreadWork): Promise<ThreadAnswer> {
  try {
    return { statistics: 'task' in work ? taskStatistics(work.task) : await specStatistics(work.read) };
  } catch (error) {
    if (error instanceof DomainError) return { refused: { kind: error.kind, reason: error.message } };
    const { message, stack, code, errcode } = error instanceof Error ? (error as Error & { code?: unknown; errcode?: unknown }) : { message: String(error), stack: undefined, code: undefined, errcode: undefined };
    return { failed: { message, stack, code, errcode } };
  }
}

parentPort?.on('message', (work: ThreadWork) => {
  void answer(work).then((reply) => parentPort!.postMessage(reply));
});
