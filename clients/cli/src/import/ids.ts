import { createHash, hash as digest } from 'node:crypto';

// The UUIDv5 namespace of ids the CLI derives for imported lines. Fixed forever: changing it would
// make a re-run store every record a second time.
const NAMESPACE = '6f1d2c1e-8a4b-5c3d-9e2f-4b7a1c0d9e8f';
const NAMESPACE_BYTES = Buffer.from(NAMESPACE.replaceAll('-', ''), 'hex');
/** 16 ASCII characters: 16 bytes of room for the namespace at the start of the UTF-8 buffer. */
const ROOM = '0123456789abcdef';

/**
 * The identity of an input: the SHA-256 of its first line. Known as soon as that line is read (so
 * stdin works), and unchanged when lines are appended to the file later.
 */
export function inputKey(firstLine: string): string {
  return createHash('sha256').update(firstLine).digest('hex');
}

/**
 * The id of a line that has none: the UUIDv5 (RFC 9562) of the record kind, the input's key, the
 * line number and the line's text. A re-run of the same input gives every line the same id, so
 * the server's idempotency stores nothing twice; a line whose text changed is a new record.
 * Computed with node:crypto's one-shot SHA-1 (the `uuid` package's JavaScript SHA-1 took 15 µs a line).
 */
export function lineId(kind: string, key: string, lineNumber: number, text: string): string {
  const name = Buffer.from(`${ROOM}${kind}\n${key}\n${lineNumber}\n${text}`, 'utf8');
  NAMESPACE_BYTES.copy(name); // the namespace's raw bytes, then the name in UTF-8
  const hash = digest('sha1', name, 'buffer');
  hash[6] = (hash[6]! & 0x0f) | 0x50; // version 5
  hash[8] = (hash[8]! & 0x3f) | 0x80; // RFC 9562 variant
  const hex = hash.toString('hex', 0, 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
