import { randomFillSync } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

// UUIDv7 ids for the server's records. The uuid package lays out the bytes; the rest is here
// because batches make thousands of ids at once: randomness is drawn from a pool (the package asks
// the system for 16 bytes per id), the bytes are laid out into one reused buffer, and the text is
// written once as latin-1 (the package's own formatting builds each id from 20 strings and a new
// byte array: 590 bytes of garbage per id, 0.6 MB per batch of 1,000 feedback records).

const POOL_BYTES = 16 * 1024;
const pool = Buffer.alloc(POOL_BYTES);
let offset = POOL_BYTES;
let lastMs = 0;
let seq = 0;

const random = Buffer.alloc(16);
const bytes = Buffer.alloc(16);
const text = Buffer.alloc(36, '-'); // the hyphens stay where they are
/** The two ASCII hex digits of each byte value, at 2 × value. */
const HEX = Buffer.from(Array.from({ length: 256 }, (_, value) => value.toString(16).padStart(2, '0')).join(''), 'latin1');
/** Where each byte's two digits go in the 36 characters of `8-4-4-4-12`. */
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

function fillRandom(): void {
  if (offset + 16 > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  pool.copy(random, 0, offset, offset + 16);
  offset += 16;
}

/** A new lowercase, hyphenated UUIDv7; ids made later in this process sort after earlier ones. */
export function newId(): string {
  fillRandom();
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    seq = random.readUInt32BE(0) & 0x3ffffff; // a random start leaves room to count up within the ms
  } else {
    seq = (seq + 1) & 0x7fffffff;
    if (seq === 0) lastMs++;
  }
  uuidv7({ msecs: lastMs, seq, random }, bytes);
  for (let i = 0; i < 16; i++) {
    const at = AT[i]!;
    const digits = bytes[i]! * 2;
    text[at] = HEX[digits]!;
    text[at + 1] = HEX[digits + 1]!;
  }
  return text.toString('latin1');
}
