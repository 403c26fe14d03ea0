import { closingQuote } from '@loupe/shared/json-text';

// A JSON text's structure, read from its bytes before JSON.parse builds anything (a request body's,
// and a stored record's before an answer holds it): parsing is
// where a small body becomes a large heap (`[{},{},…]` is 3 bytes per object, each object ~60
// bytes of heap), and where nesting becomes stack depth for every later walk of the value.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

export type JsonShape = {
  /** Deepest nesting of objects and arrays (a flat object is 1). */
  depth: number;
  /** Objects and arrays. */
  containers: number;
  /** Commas outside strings: one less than the values in each container, summed. */
  separators: number;
};

/**
 * Measures a UTF-8 JSON text in one pass (structural bytes are ASCII, so bytes are enough). It
 * stops early once `maxDepth` is passed, returning the depth reached. Malformed text is measured
 * as far as it goes; JSON.parse reports it afterwards.
 */
export function measureJson(bytes: Uint8Array, maxDepth: number): JsonShape {
  const meter = new JsonMeter(maxDepth);
  meter.write(bytes);
  return meter.shape();
}

/**
 * The same measure of a JSON text held as a string (a stored record read back), without encoding
 * it first: its structural characters are ASCII, the same code units in UTF-16 as bytes in UTF-8.
 * Encoding each record of a page (Buffer.from) cost more than measuring it.
 */
export function measureJsonText(text: string): JsonShape {
  let depth = 0;
  let deepest = 0;
  let containers = 0;
  let separators = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      i = closingQuote(text, i + 1);
    } else if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
      containers++;
      if (++depth > deepest) deepest = depth;
    } else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
      depth--;
    } else if (code === COMMA) {
      separators++;
    }
  }
  return { depth: deepest, containers, separators };
}

/**
 * The same measure taken chunk by chunk as a body arrives, so that the pass over a large body is
 * spread over its chunks instead of holding the event loop for all of it at once.
 */
export class JsonMeter {
  readonly #maxDepth: number;
  #depth = 0;
  #deepest = 0;
  #containers = 0;
  #separators = 0;
  #inString = false;
  #escaped = false;

  constructor(maxDepth: number) {
    this.#maxDepth = maxDepth;
  }

  /** Measures the next chunk of the text; false once past the depth bound (the rest need not come). */
  write(bytes: Uint8Array): boolean {
    if (this.#deepest > this.#maxDepth) return false;
    // Locals in the loop, fields between chunks.
    let depth = this.#depth;
    let deepest = this.#deepest;
    let containers = this.#containers;
    let separators = this.#separators;
    let inString = this.#inString;
    let escaped = this.#escaped;
    const length = bytes.length;
    for (let i = 0; i < length; i++) {
      if (inString) {
        // Jump to the next quote; it closes the string unless an odd number of backslashes
        // precede it (a run from an earlier chunk is carried in `escaped`).
        const quote = bytes.indexOf(QUOTE, i);
        if (quote < 0) {
          escaped = oddBackslashesBefore(bytes, { from: i, end: length }, escaped);
          break;
        }
        if (!oddBackslashesBefore(bytes, { from: i, end: quote }, escaped)) inString = false;
        escaped = false;
        i = quote;
        continue;
      }
      const byte = bytes[i];
      if (byte === QUOTE) {
        inString = true;
        escaped = false;
      } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
        containers++;
        if (++depth > deepest) {
          deepest = depth;
          if (deepest > this.#maxDepth) break;
        }
      } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
        depth--;
      } else if (byte === COMMA) {
        separators++;
      }
    }
    this.#depth = depth;
    this.#deepest = deepest;
    this.#containers = containers;
    this.#separators = separators;
    this.#inString = inString;
    this.#escaped = escaped;
    return deepest <= this.#maxDepth;
  }

  shape(): JsonShape {
    return { depth: this.#deepest, containers: this.#containers, separators: this.#separators };
  }
}

/**
 * Whether the bytes before `end` (from `from` on) end in an odd run of backslashes, counting a
 * run that continues from before `from` (`escapedBefore`: that run was odd).
 */
function oddBackslashesBefore(bytes: Uint8Array, { from, end }: { from: number; end: number }, escapedBefore: boolean): boolean {
  let count = 0;
  let j = end - 1;
  while (j >= from && bytes[j] === BACKSLASH) {
    count++;
    j--;
  }
  const odd = count % 2 === 1;
  return j < from ? odd !== escapedBefore : odd;
}

/**
 * What handling a body may hold in the heap at its peak, in bytes. Measured on a 30 MB batch of
 * 10,000 feedback records with long strings: 120 MB of heap above the idle server, 4× its bytes
 * (the text as a string, the parsed value, its validated copy, the rows written). Objects and
 * array slots are counted on top with generous sizes (an empty object is ~60 bytes in V8, and
 * validation copies it), so that bodies made of tiny values weigh what they will cost.
 */
export function bodyWeight(byteLength: number, shape: JsonShape): number {
  return 4 * byteLength + 160 * shape.containers + 32 * shape.separators;
}
