import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/** SHA-256 of the RFC 8785 canonical JSON of a value: equal content, equal hash. */
export function contentHash(value: unknown): string {
  return createHash('sha256').update(canonicalize(value) ?? 'undefined').digest('hex');
}

export type Keyed = { key: string; hash: string | null };

/**
 * Folds repeats of one client-chosen id within a batch: identical content is one record (its
 * first position is returned for each repeat); different content breaks the batch.
 */
export function firstPositions(elements: readonly Keyed[], describe: (index: number, first: number) => Error): number[] {
  const first = new Map<string, number>();
  return elements.map((element, index) => {
    const earlier = first.get(element.key);
    if (earlier === undefined) {
      first.set(element.key, index);
      return index;
    }
    if (elements[earlier]!.hash !== element.hash) throw describe(index, earlier);
    return earlier;
  });
}

/** How insertThenCompare stores one kind of record, inside the caller's transaction. */
export type InsertThenCompare<E extends Keyed, S> = {
  /** Inserts a chunk with "on conflict do nothing"; answers the keys of the rows it inserted. */
  insert(chunk: readonly E[]): Promise<ReadonlySet<string>>;
  /** The stored rows of a chunk of elements whose key was taken, by key, with their hash. */
  readStored(chunk: readonly E[]): Promise<ReadonlyMap<string, S & { hash: string | null }>>;
  /** The 409 for an element whose key is stored with other content; or undefined to leave that element out and go on (the caller reports it). */
  conflict(element: E): Error | undefined;
};

/**
 * Idempotent creation by client-chosen id: every element (one per key, see firstPositions) is
 * inserted, leaving a row whose key exists alone; the rows that were not inserted (a retry, or a
 * concurrent request with the same id) are read back and compared by content hash. Equal is a
 * retry, different is a 409 that fails the whole batch (or, as `conflict` chooses, an element left
 * out). Answers the stored rows of the retries.
 */
/** What a batch write answers: a result per element, and how many records it stored that were not stored before. */
export type StoredBatch<R> = { results: R[]; newRecords: number };

export async function insertThenCompare<E extends Keyed, S>(
  elements: readonly E[],
  chunkSize: number,
  store: InsertThenCompare<E, S>,
): Promise<Map<string, S>> {
  const taken: E[] = [];
  for (let i = 0; i < elements.length; i += chunkSize) {
    const chunk = elements.slice(i, i + chunkSize);
    const inserted = await store.insert(chunk);
    for (const element of chunk) if (!inserted.has(element.key)) taken.push(element);
  }
  const retries = new Map<string, S>();
  for (let i = 0; i < taken.length; i += chunkSize) {
    const chunk = taken.slice(i, i + chunkSize);
    const stored = await store.readStored(chunk);
    for (const element of chunk) {
      const row = stored.get(element.key);
      if (!row) throw new Error(`the stored row of ${JSON.stringify(element.key)} was deleted after its insert was refused`);
      if (row.hash !== element.hash) {
        const error = store.conflict(element);
        if (error) throw error;
        continue;
      }
      retries.set(element.key, row);
    }
  }
  return retries;
}
