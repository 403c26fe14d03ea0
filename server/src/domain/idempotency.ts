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
