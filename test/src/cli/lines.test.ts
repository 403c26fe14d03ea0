import { Readable } from 'node:stream';
import { createInterface } from 'node:readline';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { nestsDeeperThan } from '../../../clients/cli/src/import/json-depth.ts';
import { splitLines, type Line } from '../../../clients/cli/src/import/lines.ts';

// The CLI's line reader (line numbers, and so derived ids, depend on it) and its nesting check.

async function split(chunks: Buffer[], maxLineBytes: number): Promise<Line[]> {
  const lines: Line[] = [];
  for await (const chunk of splitLines(Readable.from(chunks), maxLineBytes)) lines.push(...chunk.lines);
  return lines;
}

async function readlineLines(bytes: Buffer): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of createInterface({ input: Readable.from([bytes]), crlfDelay: Infinity })) lines.push(line);
  return lines;
}

/** Bytes cut into reads at the given offsets. */
function cut(bytes: Buffer, at: number[]): Buffer[] {
  const points = [...new Set(at.map((n) => n % (bytes.length + 1)))].sort((a, b) => a - b);
  return [...points, bytes.length].map((end, i) => bytes.subarray(i ? points[i - 1] : 0, end)).filter((part) => part.length);
}

it('splits lines as node:readline does, however the input is cut into reads (\\r\\n, lone \\r, UTF-8 split across reads)', async () => {
  const piece = fc.constantFrom('a', '{"b":1}', '\n', '\r', '\r\n', 'é', '😀', ' ', '');
  await fc.assert(
    fc.asyncProperty(fc.array(piece, { maxLength: 40 }), fc.array(fc.nat(), { maxLength: 6 }), async (pieces, at) => {
      const bytes = Buffer.from(pieces.join(''));
      expect(await split(cut(bytes, at), 1 << 20)).toEqual(await readlineLines(bytes));
    }),
    { numRuns: 2000 },
  );
});

it('hands a line past the limit over as too long with its first bytes, the same whichever way it was read', async () => {
  const long = 'x'.repeat(5000);
  const bytes = Buffer.from(`{"a":1}\n${long}\r\n{"b":2}\n${'é'.repeat(3000)}`);
  const expected = ['{"a":1}', { tooLong: true, head: 'x'.repeat(1024) }, '{"b":2}', { tooLong: true, head: 'é'.repeat(512) }];
  expect(await split([bytes], 4096)).toEqual(expected);
  expect(await split(cut(bytes, [3, 100, 4000, 5009, 6000]), 4096)).toEqual(expected);
  expect(await split(cut(bytes, Array.from({ length: 200 }, (_, i) => i * 61)), 4096)).toEqual(expected);
  // A small limit keeps the limit plus one byte.
  expect((await split([bytes], 10))[1]).toEqual({ tooLong: true, head: 'x'.repeat(11) });
  // A line that spans reads comes whole; from 1 MiB on, as bytes (decoded when its turn comes).
  const [, spanning] = await split(cut(bytes, Array.from({ length: 100 }, (_, i) => i * 100)), 1 << 20);
  expect(spanning).toEqual(long);
  const big = 'y'.repeat(1 << 20);
  const [first, large, last] = await split(cut(Buffer.from(`{}\n${big}\n{}`), [1000, 500_000]), 2 << 20);
  expect([first, last]).toEqual(['{}', '{}']);
  expect(large).toHaveProperty('bytes');
  expect(typeof large === 'object' && 'bytes' in large && large.bytes.toString()).toBe(big);
});

it('measures nesting outside strings only, escapes included', () => {
  expect(nestsDeeperThan('[[[]]]', 3)).toBe(false);
  expect(nestsDeeperThan('[[[[]]]]', 3)).toBe(true);
  expect(nestsDeeperThan('{"a":{"b":{"c":1}}}', 3)).toBe(false);
  expect(nestsDeeperThan('{"a":{"b":{"c":{}}}}', 3)).toBe(true);
  expect(nestsDeeperThan('{"[[[[[[":"{{{{{{{{"}', 1)).toBe(false);
  expect(nestsDeeperThan('{"a":"\\"[[[[[[[[\\\\"}', 1)).toBe(false);
  expect(nestsDeeperThan('{"a":"\\\\"}[[[[', 3)).toBe(true);
  expect(nestsDeeperThan(`${'['.repeat(200_000)}${']'.repeat(200_000)}`, 62)).toBe(true);
  expect(nestsDeeperThan('[1, 2, 3]', 0)).toBe(true);
  expect(nestsDeeperThan('"not closed', 0)).toBe(false);
});
