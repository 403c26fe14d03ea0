import { createHash } from 'node:crypto';
import { ClientId, FeedbackCreateReq } from '@loupe/shared';
import { expect, it } from 'vitest';
import { inputKey, lineId } from '../../../clients/cli/src/import/ids.ts';
import { chunkByLength } from '../../../clients/src/export/queue.ts';
import { majority, mean, specKind } from '../../../clients/src/export/scores.ts';

// The pure parts of the CLI: derived ids (the README documents their layout), lookup chunks, summaries.

const sha = (algorithm: string, text: string) => createHash(algorithm).update(text).digest('hex');

it('derives a line id as a UUIDv8 of the input, the line number and a hash of the line, ascending with the lines', () => {
  const key = inputKey('{"first":"line"}');
  expect(key).toBe(sha('sha256', '{"first":"line"}'));
  const prefix = sha('sha256', `feedback\n${key}`).slice(0, 12);
  for (const [line, text] of [[1, '{"a":1}'], [2, '{"é":"ünïcödé 👍"}'], [1_000_000, ''], [2 ** 36 - 1, '{}']] as const) {
    const id = lineId('feedback', key, line, text);
    const hex = line.toString(16).padStart(9, '0');
    const content = sha('sha1', `feedback\n${key}\n${line}\n${text}`).slice(0, 9);
    expect(id).toBe(`${prefix.slice(0, 8)}-${prefix.slice(8)}-8${hex.slice(0, 3)}-8${hex.slice(3, 6)}-${hex.slice(6)}${content}`);
    // The server's schemas for ids: a UUID (version 8, RFC variant) for feedback, ClientId for calls.
    expect(FeedbackCreateReq.shape.id.safeParse(id).success).toBe(true);
    expect(ClientId.safeParse(id).success).toBe(true);
  }
  const ids = [1, 2, 9, 10, 4095, 4096, 16_777_215, 16_777_216, 2 ** 36 - 1].map((line) => lineId('calls', key, line, `{"n":${line}}`));
  expect([...ids].sort()).toEqual(ids);
  expect(lineId('calls', key, 1, '{}')).not.toBe(lineId('feedback', key, 1, '{}'));
  expect(lineId('calls', key, 1, '{}')).not.toBe(lineId('calls', key, 1, '{ }'));
  expect(lineId('calls', key, 1, '{}')).not.toBe(lineId('calls', inputKey('{}'), 1, '{}'));
  expect(lineId('calls', key, 1, '{}')).toBe(lineId('calls', key, 1, '{}'));
  expect(() => lineId('calls', key, 2 ** 36, '{}')).toThrow(RangeError);
});

it('splits filter values so that each query stays short enough for a URL', () => {
  const ids = Array.from({ length: 1000 }, (_, i) => `call-${i}-${'x'.repeat(100)}`);
  const chunks = chunkByLength(ids);
  expect(chunks.flat()).toEqual(ids);
  for (const chunk of chunks) expect(encodeURIComponent(JSON.stringify(chunk)).length).toBeLessThan(4500);
  expect(chunkByLength([])).toEqual([]);
});

it('summarises values: majority (null on a tie), mean, and the kind from the JSON Schema', () => {
  expect(majority(['a', 'b', 'a'])).toBe('a');
  expect(majority(['a', 'b'])).toBeNull();
  expect(majority([])).toBeNull();
  expect(majority([{ x: 1 }, { x: 1 }, 2])).toEqual({ x: 1 });
  expect(mean([1, 2, 4])).toBeCloseTo(7 / 3);
  expect(mean([])).toBeNull();
  expect(specKind({ enum: ['a'] })).toBe('nominal');
  expect(specKind({ type: 'boolean' })).toBe('nominal');
  expect(specKind({ type: 'integer' })).toBe('numeric');
  expect(specKind({ type: 'number' })).toBe('numeric');
  expect(specKind({ type: 'object' })).toBe('other');
});
