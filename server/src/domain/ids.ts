import { randomFillSync } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

// UUIDv7 ids for the server's records. The uuid package asks the system for 16 random bytes per id;
// batches of thousands make that a visible cost, so randomness is drawn from a pool here and the
// package does the layout, keeping its millisecond-then-counter order within this process.

const POOL_BYTES = 16 * 1024;
const pool = Buffer.alloc(POOL_BYTES);
let offset = POOL_BYTES;
let lastMs = 0;
let seq = 0;

function random16(): Buffer {
  if (offset + 16 > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  offset += 16;
  return pool.subarray(offset - 16, offset);
}

/** A new lowercase, hyphenated UUIDv7; ids made later in this process sort after earlier ones. */
export function newId(): string {
  const random = random16();
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    seq = random.readUInt32BE(0) & 0x3ffffff; // a random start leaves room to count up within the ms
  } else {
    seq = (seq + 1) & 0x7fffffff;
    if (seq === 0) lastMs++;
  }
  return uuidv7({ msecs: lastMs, seq, random });
}
