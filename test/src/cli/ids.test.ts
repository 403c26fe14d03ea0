import { v5 as uuidv5 } from 'uuid';
import { expect, it } from 'vitest';
import { inputKey, lineId } from '../../../clients/cli/src/import/ids.ts';
import { chunkByLength } from '../../../clients/cli/src/export/queue.ts';
import { majority, mean, specKind } from '../../../clients/cli/src/export/scores.ts';

// The pure parts of the CLI: derived ids (the README promises UUIDv5), lookup chunks, summaries.

it('derives a line id as the UUIDv5 of kind, input key, line number and text', () => {
  const key = inputKey('{"first":"line"}');
  expect(key).toMatch(/^[0-9a-f]{64}$/);
  for (const [line, text] of [[1, '{"a":1}'], [2, '{"é":"ünïcödé 👍"}'], [1_000_000, '']] as const) {
    expect(lineId('feedback', key, line, text)).toBe(uuidv5(`feedback\n${key}\n${line}\n${text}`, '6f1d2c1e-8a4b-5c3d-9e2f-4b7a1c0d9e8f'));
  }
  expect(lineId('calls', key, 1, '{}')).not.toBe(lineId('feedback', key, 1, '{}'));
  expect(lineId('calls', key, 1, '{}')).not.toBe(lineId('calls', key, 2, '{}'));
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
