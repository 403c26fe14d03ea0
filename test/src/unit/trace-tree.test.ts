import { describe, expect, it } from 'vitest';
import { modelOf } from '../../../clients/web/src/trace/call-model.ts';
import { ancestorsOf, traceRows, visibleRows, type TraceCall } from '../../../clients/web/src/trace/trace-tree.ts';

// The annotate page's trace tree: calls nested by parent_id (pure), and the model each row shows.

const call = (id: string, parent_id: string | null = null): TraceCall => ({ id, parent_id });
/** Each row as `level:id`, in display order. */
const outline = (calls: TraceCall[]) => traceRows(calls).map((row) => `${row.level}:${row.call.id}`);

describe('traceRows', () => {
  it('nests calls under their parents, children in the order given, parents before children whatever the order given', () => {
    const calls = [call('c2', 'b'), call('a'), call('b', 'a'), call('c1', 'b'), call('d', 'a'), call('e')];
    expect(outline(calls)).toEqual(['1:a', '2:b', '3:c2', '3:c1', '2:d', '1:e']);
    const rows = traceRows(calls);
    const byId = new Map(rows.map((row) => [row.call.id, row]));
    expect([byId.get('a')!.position, byId.get('a')!.siblings, byId.get('a')!.children]).toEqual([1, 2, 2]);
    expect([byId.get('e')!.position, byId.get('e')!.siblings, byId.get('e')!.children]).toEqual([2, 2, 0]);
    expect([byId.get('c1')!.position, byId.get('c1')!.siblings, byId.get('c1')!.parentId]).toEqual([2, 2, 'b']);
    expect(rows.every((row) => !row.detached)).toBe(true);
  });

  it('makes a call whose parent is missing a root, marked detached; one naming itself is a plain root', () => {
    const rows = traceRows([call('a'), call('orphan', 'gone'), call('child', 'orphan'), call('self', 'self')]);
    expect(rows.map((row) => [row.level, row.call.id, row.detached])).toEqual([
      [1, 'a', false],
      [1, 'orphan', true],
      [2, 'child', false],
      [1, 'self', false],
    ]);
    expect(rows.filter((row) => row.level === 1).map((row) => `${row.position}/${row.siblings}`)).toEqual(['1/3', '2/3', '3/3']);
  });

  it('cuts a loop of parents at its first call given, and keeps every call exactly once', () => {
    // x → y → z → x, with w under y; and a root beside them.
    const calls = [call('y', 'x'), call('root'), call('z', 'y'), call('x', 'z'), call('w', 'y')];
    const rows = traceRows(calls);
    expect(rows.map((row) => `${row.level}:${row.call.id}`)).toEqual(['1:root', '1:y', '2:z', '3:x', '2:w']);
    expect(rows.find((row) => row.call.id === 'y')!.detached).toBe(true);
    expect(rows.filter((row) => row.level === 1).map((row) => row.siblings)).toEqual([2, 2]);
    // Two calls naming each other, and nothing else: both shown, once each.
    expect(outline([call('p', 'q'), call('q', 'p')])).toEqual(['1:p', '2:q']);
  });

  it('keeps the first of calls given twice', () => {
    const rows = traceRows([{ id: 'a', parent_id: null, n: 1 }, { id: 'b', parent_id: 'a', n: 2 }, { id: 'a', parent_id: 'b', n: 3 }]);
    expect(rows.map((row) => [row.level, row.call.id, row.call.n])).toEqual([
      [1, 'a', 1],
      [2, 'b', 2],
    ]);
  });

  it('nests a trace 100,000 calls deep without recursion, and a wide one', () => {
    const depth = 100_000;
    const chain = Array.from({ length: depth }, (_, i) => call(`n${i}`, i ? `n${i - 1}` : null)).reverse();
    const rows = traceRows(chain);
    expect(rows).toHaveLength(depth);
    expect(rows[0]!.call.id).toBe('n0');
    expect(rows.at(-1)).toMatchObject({ level: depth, parentId: `n${depth - 2}`, children: 0 });
    expect(ancestorsOf(rows, `n${depth - 1}`)).toHaveLength(depth - 1);
    const wide = traceRows([call('top'), ...Array.from({ length: 50_000 }, (_, i) => call(`leaf${i}`, 'top'))]);
    expect(wide[0]!.children).toBe(50_000);
    expect(wide.at(-1)).toMatchObject({ level: 2, position: 50_000, siblings: 50_000 });
  });

  it('leaves out the rows under a closed row, and lists a row\'s ancestors nearest first', () => {
    const rows = traceRows([call('a'), call('b', 'a'), call('c', 'b'), call('d', 'a'), call('e')]);
    expect(visibleRows(rows, new Set()).map((row) => row.call.id)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(visibleRows(rows, new Set(['b'])).map((row) => row.call.id)).toEqual(['a', 'b', 'd', 'e']);
    expect(visibleRows(rows, new Set(['a', 'b'])).map((row) => row.call.id)).toEqual(['a', 'e']);
    // A leaf named closed changes nothing.
    expect(visibleRows(rows, new Set(['c', 'e'])).map((row) => row.call.id)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(ancestorsOf(rows, 'c')).toEqual(['b', 'a']);
    expect(ancestorsOf(rows, 'e')).toEqual([]);
  });
});

describe('modelOf', () => {
  it('reads the request model, then the response model, then llm.model_name, then model; nested or as flat keys', () => {
    expect(modelOf({ gen_ai: { request: { model: 'gpt-5' }, response: { model: 'gpt-5-2026' } } })).toBe('gpt-5');
    expect(modelOf({ gen_ai: { response: { model: 'gpt-5-2026' } }, llm: { model_name: 'other' } })).toBe('gpt-5-2026');
    expect(modelOf({ 'llm.model_name': 'claude', model: 'x' })).toBe('claude');
    expect(modelOf({ model: 'gpt-5-mini' })).toBe('gpt-5-mini');
    expect(modelOf({ gen_ai: { request: { model: 7 } } })).toBeNull();
    expect(modelOf({ gen_ai: 'text' })).toBeNull();
    expect(modelOf(null)).toBeNull();
  });
});
