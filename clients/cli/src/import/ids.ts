import { createHash, hash as digest } from 'node:crypto';

// The UUIDv5 namespace of ids the CLI derives for imported lines. Fixed forever: changing it would
// make a re-run store every record a second time.
const NAMESPACE = '6f1d2c1e-8a4b-5c3d-9e2f-4b7a1c0d9e8f';
const NAMESPACE_BYTES = Buffer.from(NAMESPACE.replaceAll('-', ''), 'hex');
const VARIANT = '89ab';
/** Where a line's UUIDv5 name is written: the namespace's raw bytes, then the name in UTF-8. Grown as needed. */
let nameBytes = withNamespace(64 * 1024);

function withNamespace(size: number): Buffer {
  const buffer = Buffer.allocUnsafe(size);
  NAMESPACE_BYTES.copy(buffer);
  return buffer;
}

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
 * Computed with node:crypto's one-shot SHA-1 (the `uuid` package's JavaScript SHA-1 took 15 µs a
 * line) over one buffer written in place.
 */
export function lineId(kind: string, key: string, lineNumber: number, text: string): string {
  const head = `${kind}\n${key}\n${lineNumber}\n`;
  const bound = NAMESPACE_BYTES.length + 3 * (head.length + text.length); // UTF-8: at most 3 bytes per UTF-16 unit
  if (bound > nameBytes.length) nameBytes = withNamespace(bound);
  let end = NAMESPACE_BYTES.length + nameBytes.write(head, NAMESPACE_BYTES.length, 'latin1');
  end += nameBytes.write(text, end, 'utf8');
  // The digest as hex (a Buffer out of node:crypto costs more than the SHA-1 itself), with the
  // version (5) and the RFC 9562 variant (10xx) written over its 13th and 17th digits.
  const hex = digest('sha1', nameBytes.subarray(0, end), 'hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${VARIANT[parseInt(hex[16]!, 16) & 3]}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
