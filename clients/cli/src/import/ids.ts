import { createHash } from 'node:crypto';
import { v5 as uuidv5 } from 'uuid';

// The UUIDv5 namespace of ids the CLI derives for imported lines. Fixed forever: changing it would
// make a re-run store every record a second time.
const NAMESPACE = '6f1d2c1e-8a4b-5c3d-9e2f-4b7a1c0d9e8f';

/**
 * The identity of an input: the SHA-256 of its first line. Known as soon as that line is read (so
 * stdin works), and unchanged when lines are appended to the file later.
 */
export function inputKey(firstLine: string): string {
  return createHash('sha256').update(firstLine).digest('hex');
}

/**
 * The id of a line that has none: a UUIDv5 of the record kind, the input's key, the line number and
 * the line's text. A re-run of the same input gives every line the same id, so the server's
 * idempotency stores nothing twice; a line whose text changed is a new record.
 */
export function lineId(kind: string, key: string, lineNumber: number, text: string): string {
  return uuidv5(`${kind}\n${key}\n${lineNumber}\n${text}`, NAMESPACE);
}
