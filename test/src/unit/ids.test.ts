import { validate, version } from 'uuid';
import { describe, expect, it } from 'vitest';
import { newId } from '../../../server/src/domain/ids.ts';

describe('newId', () => {
  it('makes lowercase UUIDv7 text that sorts in the order it was made, none repeated, across many refills of its random pool', () => {
    const started = Date.now();
    const ids = Array.from({ length: 50_000 }, newId); // 50,000 × 16 bytes: the 16 KiB pool refills 48 times
    for (const id of ids) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(validate(id) && version(id)).toBe(7);
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id, i) => i === 0 || ids[i - 1]! < id)).toBe(true);
    // The first 48 bits are the millisecond it was made.
    const ms = parseInt(ids[0]!.replaceAll('-', '').slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(started);
    expect(ms).toBeLessThanOrEqual(Date.now() + 1);
  });
});
